package maintenance

import (
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	night, err := ParseWindow("22:00-02:00")
	if err != nil {
		t.Fatal(err)
	}
	morning, err := ParseWindow("04:00-08:00")
	if err != nil {
		t.Fatal(err)
	}
	day := func(h, m int) time.Time { return time.Date(2026, 11, 24, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		w    Window
		at   time.Time
		want time.Time
	}{
		{night, day(12, 0), day(22, 0)},
		{night, day(23, 0), day(23, 0)},                  // inside: now
		{night, day(1, 30), day(1, 30)},                  // inside, after midnight
		{night, day(2, 0), day(22, 0)},                   // the end is outside
		{morning, day(9, 0), day(4, 0).AddDate(0, 0, 1)}, // tomorrow
		{morning, day(3, 59), day(4, 0)},
	} {
		if got := tc.w.Next(tc.at); !got.Equal(tc.want) {
			t.Errorf("%s.Next(%s) = %s, want %s", tc.w, tc.at, got, tc.want)
		}
	}
}

func TestConfigResolve(t *testing.T) {
	c, err := ParseConfig("default=01:00-03:00, westeurope=04:00-08:00, plan:trial=10:00-11:00")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Resolve("azure", "westeurope").String(); got != "04:00:00-08:00:00" {
		t.Errorf("region window = %s", got)
	}
	if got := c.Resolve("trial", "westeurope").String(); got != "10:00:00-11:00:00" {
		t.Errorf("plan window = %s", got)
	}
	if got := c.Resolve("aws", "eu-central-1").String(); got != "01:00:00-03:00:00" {
		t.Errorf("default window = %s", got)
	}
	for _, bad := range []string{"x", "default=25:00-01:00", "westeurope=01:00-01:00", "=01:00-02:00"} {
		if _, err := ParseConfig(bad); err == nil {
			t.Errorf("ParseConfig(%q) accepted", bad)
		}
	}
	if Timestamp("04:00:00") != "0000-01-01T04:00:00Z" {
		t.Errorf("Timestamp = %s", Timestamp("04:00:00"))
	}
}
