// Package pgserver runs a local PostgreSQL server from the machine's own
// server binaries (initdb, pg_ctl, postgres), so that `keb dev` and the test
// rig need neither Docker nor a database someone set up by hand.
//
// A cluster lives in one data directory. `keb dev` keeps it (data and port
// survive restarts); tests ask for a Throwaway cluster that trades durability
// for speed. The server listens on 127.0.0.1 only, with trust authentication
// for the superuser "keb" and no Unix socket, so it is reachable by nothing
// but local TCP clients that know its port.
//
// PostgreSQL refuses to run as root, so when keb runs as root the cluster is
// created and run as an unprivileged OS user (the owner of an existing
// cluster, else "postgres", else "nobody").
package pgserver
