package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStat is what the bench reads of /proc/<pid>/stat.
type procStat struct {
	pid, ppid int
	// own is the process's user+system time; reaped what it has collected
	// of its waited-for children (cutime+cstime).
	own, reaped time.Duration
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times on Linux.
const clockTicks = 100

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is f[0], ppid f[1], utime f[11] … cstime f[14].
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	ticks := func(v int64) time.Duration { return time.Duration(v) * time.Second / clockTicks }
	return procStat{pid: pid, ppid: int(n(1)), own: ticks(n(11) + n(12)), reaped: ticks(n(13) + n(14))}, nil
}

// treeCPU is the CPU time of the process tree under root, excluding root's
// own: every live descendant's, plus what root and they have reaped of
// descendants that exited. A PostgreSQL backend that served one connection
// and exited is thus still counted, in its postmaster's reaped time.
func treeCPU(root int) time.Duration {
	entries, _ := filepath.Glob("/proc/[0-9]*/stat")
	children := map[int][]procStat{}
	var rootStat procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(e)))
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil {
			continue // exited meanwhile: its time is in its parent's reaped time
		}
		if pid == root {
			rootStat = st
		}
		children[st.ppid] = append(children[st.ppid], st)
	}
	total := rootStat.reaped
	var walk func(pid int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			total += c.own + c.reaped
			walk(c.pid)
		}
	}
	walk(root)
	return total
}

// cpuElsewhere is the CPU the bench's work costs outside the measured keb:
// PostgreSQL (the bench's cluster: postmaster, backends, background
// workers), the clusters `keb dev` runs as its children (the control plane's
// kube-apiserver and etcd, and the runtimes' clusters keb sim starts), the
// stand-ins (keb sim's own process: the simulated infrastructure manager,
// Lifecycle Manager and the HTTP stand-ins, which a landscape runs apart
// from keb) and the load generator (this process; pgbench, its child, is not
// in it). Beside keb's own CPU it shows where a cell's CPU went on a machine
// whose cores all of them share.
type cpuElsewhere struct {
	postgres, controlPlane, standIns, client time.Duration
	// standInsKnown is false for a keb dev that runs its stand-ins in its
	// own process (before keb sim): their CPU is then in keb's.
	standInsKnown bool
}

// cpuProbe reads cpuElsewhere.
type cpuProbe struct {
	// postmaster is the bench cluster's postmaster PID (0: not measured).
	postmaster int
}

func newCPUProbe(dataDir string) cpuProbe {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return cpuProbe{}
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(first))
	return cpuProbe{postmaster: pid}
}

func (pr cpuProbe) read(keb *kebProcess) cpuElsewhere {
	var c cpuElsewhere
	if pr.postmaster > 0 {
		if st, err := readProcStat(pr.postmaster); err == nil {
			c.postgres = st.own + treeCPU(pr.postmaster)
		}
	}
	if keb != nil {
		c.controlPlane = treeCPU(keb.cmd.Process.Pid)
		if keb.simPID > 0 {
			if st, err := readProcStat(keb.simPID); err == nil && st.ppid == keb.cmd.Process.Pid {
				c.standIns, c.standInsKnown = st.own, true
				c.controlPlane -= st.own
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return c
}

// The parts perRequest reports, in the table's order.
const (
	partPostgres = iota
	partControlPlane
	partStandIns
	partClient
	parts
)

// perRequest is the CPU ms per request of each part between two readings
// n requests apart, less idle (ms per second of each part) over elapsed;
// NaN for the stand-ins of a keb without keb sim.
func (c cpuElsewhere) perRequest(since cpuElsewhere, n float64, idle [parts]float64, elapsed time.Duration) [parts]float64 {
	var d [parts]time.Duration
	d[partPostgres], d[partControlPlane] = c.postgres-since.postgres, c.controlPlane-since.controlPlane
	d[partStandIns], d[partClient] = c.standIns-since.standIns, c.client-since.client
	var out [parts]float64
	for i := range d {
		out[i] = max(float64(d[i])/float64(time.Millisecond)-idle[i]*elapsed.Seconds(), 0) / n
	}
	if !c.standInsKnown || !since.standInsKnown {
		out[partStandIns] = math.NaN()
	}
	return out
}
