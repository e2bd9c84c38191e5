// Package logging builds keb's logrus logger and bridges brokerapi's lager
// logs into it, with secrets redacted on the way.
package logging

import (
	"fmt"
	"io"
	"os"

	"github.com/sirupsen/logrus"
	"golang.org/x/term"
)

// New returns a logger writing to out: JSON, or text when format is "text" or
// "auto" on a terminal.
func New(out io.Writer, format, level string) (*logrus.Logger, error) {
	log := logrus.New()
	log.SetOutput(out)
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	log.SetLevel(lvl)
	text := format == "text"
	if format == "auto" {
		if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			text = true
		}
	}
	if text {
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	} else {
		log.SetFormatter(&logrus.JSONFormatter{})
	}
	return log, nil
}
