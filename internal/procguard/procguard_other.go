//go:build !linux

package procguard

import (
	"os"
	"time"
)

// Without Linux's parent-death signal and /proc, children are stopped only
// by their parent's own cleanup.
func start(string) error { return nil }

func watch(string) int { return 0 }

func stopAll(ps []proc, _ time.Duration) []proc { return nil }

func alive(p proc) bool {
	_, err := os.FindProcess(p.PID)
	return err == nil
}

// Running reports whether pid exists.
func Running(pid int) bool { return alive(proc{PID: pid}) }

// Descendants is unknown without /proc.
func Descendants(int) []int { return nil }
