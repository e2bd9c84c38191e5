package logging

import (
	"context"
	"log/slog"

	"github.com/sirupsen/logrus"
)

// Slog returns a slog.Logger that writes through log, for libraries that log
// with slog (River), so that keb keeps one log stream and one format. Records
// below min are dropped: River reports routine maintenance at info level.
func Slog(log logrus.FieldLogger, min slog.Level) *slog.Logger {
	return slog.New(&slogHandler{log: log, min: min})
}

type slogHandler struct {
	log   logrus.FieldLogger
	min   slog.Level
	group string
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	fields := logrus.Fields{}
	r.Attrs(func(a slog.Attr) bool {
		fields[h.key(a.Key)] = a.Value.Any()
		return true
	})
	e := h.log.WithFields(fields)
	switch {
	case r.Level >= slog.LevelError:
		e.Error(r.Message)
	case r.Level >= slog.LevelWarn:
		e.Warn(r.Message)
	case r.Level >= slog.LevelInfo:
		e.Info(r.Message)
	default:
		e.Debug(r.Message)
	}
	return nil
}

func (h *slogHandler) key(k string) string {
	if h.group == "" {
		return k
	}
	return h.group + "." + k
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := logrus.Fields{}
	for _, a := range attrs {
		fields[h.key(a.Key)] = a.Value.Any()
	}
	return &slogHandler{log: h.log.WithFields(fields), min: h.min, group: h.group}
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	return &slogHandler{log: h.log, min: h.min, group: h.key(name)}
}
