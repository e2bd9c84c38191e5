// Package maintenance holds runtimes' maintenance windows: the daily time
// span (UTC) in which an orchestration with the maintenanceWindow schedule
// may upgrade a runtime, how keb resolves it from plan and region
// configuration at provisioning, and when a window next opens.
package maintenance

import (
	"fmt"
	"strings"
	"time"
)

// Window is a daily span of time of day, in UTC. End before Begin means the
// window spans midnight (22:00-02:00).
type Window struct {
	Begin time.Duration // since midnight
	End   time.Duration
}

// clock is "HH:MM:SS", the form windows are stored in.
const clock = "15:04:05"

// ParseWindow reads "HH:MM-HH:MM" (seconds optional).
func ParseWindow(s string) (Window, error) {
	b, e, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return Window{}, fmt.Errorf("maintenance window %q: want HH:MM-HH:MM", s)
	}
	begin, err := parseClock(b)
	if err != nil {
		return Window{}, fmt.Errorf("maintenance window %q: %w", s, err)
	}
	end, err := parseClock(e)
	if err != nil {
		return Window{}, fmt.Errorf("maintenance window %q: %w", s, err)
	}
	if begin == end {
		return Window{}, fmt.Errorf("maintenance window %q is empty", s)
	}
	return Window{Begin: begin, End: end}, nil
}

// FromStored reads a window stored as two "HH:MM:SS" times; ok is false when
// either is empty or malformed.
func FromStored(begin, end string) (Window, bool) {
	b, err1 := parseClock(begin)
	e, err2 := parseClock(end)
	if err1 != nil || err2 != nil || b == e {
		return Window{}, false
	}
	return Window{Begin: b, End: e}, true
}

func parseClock(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{clock, "15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
				time.Duration(t.Second())*time.Second, nil
		}
	}
	return 0, fmt.Errorf("time of day %q: want HH:MM or HH:MM:SS", s)
}

// BeginClock and EndClock are the stored forms ("HH:MM:SS").
func (w Window) BeginClock() string { return formatClock(w.Begin) }

// EndClock is the stored form of End.
func (w Window) EndClock() string { return formatClock(w.End) }

func formatClock(d time.Duration) string {
	return time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Add(d).Format(clock)
}

// Timestamp renders a time of day as upstream KEB does in its API:
// "0000-01-01T04:00:00Z".
func Timestamp(stored string) string {
	d, err := parseClock(stored)
	if err != nil {
		return ""
	}
	return "0000-01-01T" + formatClock(d) + "Z"
}

// String is "HH:MM:SS-HH:MM:SS".
func (w Window) String() string { return w.BeginClock() + "-" + w.EndClock() }

// Contains reports whether t falls inside the window.
func (w Window) Contains(t time.Time) bool {
	d := sinceMidnight(t.UTC())
	if w.Begin < w.End {
		return d >= w.Begin && d < w.End
	}
	return d >= w.Begin || d < w.End
}

// Next returns t when t is inside the window, else the window's next begin
// after t.
func (w Window) Next(t time.Time) time.Time {
	if w.Contains(t) {
		return t
	}
	u := t.UTC()
	midnight := time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)
	begin := midnight.Add(w.Begin)
	if !begin.After(u) {
		begin = begin.Add(24 * time.Hour)
	}
	return begin
}

func sinceMidnight(t time.Time) time.Duration {
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
}

// Config maps plans and provider regions to windows: a plan's window wins
// over its region's, and Default applies to the rest.
type Config struct {
	Default Window
	Regions map[string]Window
	Plans   map[string]Window
}

// DefaultConfig is the window of every runtime unless configured otherwise:
// 22:00-02:00 UTC.
var DefaultConfig = Config{Default: Window{Begin: 22 * time.Hour, End: 2 * time.Hour}}

// ParseConfig reads APP_MAINTENANCE_WINDOWS: comma-separated entries
// "default=22:00-02:00", "<provider region>=HH:MM-HH:MM" and
// "plan:<plan name>=HH:MM-HH:MM". Empty gives DefaultConfig.
func ParseConfig(s string) (Config, error) {
	c := Config{Default: DefaultConfig.Default, Regions: map[string]Window{}, Plans: map[string]Window{}}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, val, ok := strings.Cut(entry, "=")
		if !ok {
			return Config{}, fmt.Errorf("maintenance windows: entry %q: want key=HH:MM-HH:MM", entry)
		}
		w, err := ParseWindow(val)
		if err != nil {
			return Config{}, fmt.Errorf("maintenance windows: entry %q: %w", entry, err)
		}
		switch key = strings.TrimSpace(key); {
		case key == "default":
			c.Default = w
		case strings.HasPrefix(key, "plan:"):
			c.Plans[strings.TrimPrefix(key, "plan:")] = w
		case key == "":
			return Config{}, fmt.Errorf("maintenance windows: entry %q has no key", entry)
		default:
			c.Regions[key] = w
		}
	}
	return c, nil
}

// Resolve returns the window of a runtime of plan in providerRegion.
func (c Config) Resolve(plan, providerRegion string) Window {
	if w, ok := c.Plans[plan]; ok {
		return w
	}
	if w, ok := c.Regions[providerRegion]; ok {
		return w
	}
	if c.Default == (Window{}) {
		return DefaultConfig.Default
	}
	return c.Default
}
