package service

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
)

// Config is what Main needs of a binary's Config: validation, and the telemetry part it
// embeds (config.Telemetry, directly or through config.Common).
type Config interface {
	Validate() error
	TelemetrySettings() config.Telemetry
}

// Binary describes a service binary for Main.
type Binary struct {
	// Name is the binary's name: service.name "plinth-<Name>" in traces.
	Name string
	// Config points at the binary's Config with its defaults set; Main loads it.
	Config Config
	// Check, when set, replaces Config.Validate (e.g. to resolve derived settings first).
	Check func() error
	// Header is printed above the settings for -h.
	Header string
	// Open assembles the service from the loaded Config (capture it in the closure).
	Open func(ctx context.Context, log *slog.Logger) (*Service, error)
	// Usage receives the -h text; nil means os.Stderr.
	Usage io.Writer
	// LogOutput receives the binary's logs; nil means os.Stderr.
	LogOutput io.Writer
}

// Main is a service binary's entry point: load the Config from args and environ (-h prints
// the settings and returns nil), check it before anything starts, set up logs and traces,
// warn about PLINTH_* variables of environ that are no setting of the Config (config.WarnUnknown),
// open the service and run it until ctx ends or SIGINT/SIGTERM; traces are flushed last.
func Main(ctx context.Context, b Binary, args, environ []string) error {
	usage := b.Usage
	if usage == nil {
		usage = os.Stderr
	}
	if ok, err := config.LoadOrUsage(b.Config, args, environ, usage, b.Header); !ok {
		return err
	}
	check := b.Check
	if check == nil {
		check = b.Config.Validate
	}
	if err := check(); err != nil {
		return err
	}
	o := telemetry.ForService(b.Name, b.Config.TelemetrySettings())
	o.LogOutput = b.LogOutput
	tel, err := telemetry.Setup(ctx, o)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.Background())
	tel.Logger.Info("starting", "config", config.LogValue(b.Config))
	config.WarnUnknown(tel.Logger, b.Config, environ)
	s, err := b.Open(ctx, tel.Logger)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}
