package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/auth/internal/oidctest"
)

// DevOIDCConfig is `auth dev-oidc`'s configuration: a local OpenID provider for trying
// sign-in on one machine (`make up` can start one), never for production.
type DevOIDCConfig struct {
	Addr string `env:"PLINTH_DEV_OIDC_ADDR" flag:"addr" default:"127.0.0.1:7020" usage:"address the local OpenID provider listens on; its issuer is http://<addr>"`
	File string `env:"PLINTH_DEV_OIDC_FILE" flag:"file" usage:"JSON file of the provider's users (username, password, email, groups), clients (id, secret, redirect_uris) and auto_login (a username signed in without a login page)"`
}

// devOIDC runs `auth dev-oidc [flags]`: a local OpenID provider (internal/oidctest) until ctx
// ends. Its issuer is printed on out.
func devOIDC(ctx context.Context, args, environ []string, out io.Writer) error {
	var cfg DevOIDCConfig
	if ok, err := config.LoadOrUsage(&cfg, args, environ, os.Stderr, "auth dev-oidc: a local OpenID provider for trying sign-in (not for production)"); !ok {
		return err
	}
	if cfg.File == "" {
		return errors.New("PLINTH_DEV_OIDC_FILE (-file): required: the provider's users and clients")
	}
	raw, err := os.ReadFile(cfg.File)
	if err != nil {
		return fmt.Errorf("PLINTH_DEV_OIDC_FILE: %w", err)
	}
	var pc oidctest.Config
	if err := json.Unmarshal(raw, &pc); err != nil {
		return fmt.Errorf("PLINTH_DEV_OIDC_FILE: %s: %w", cfg.File, err)
	}
	p, err := oidctest.Start(cfg.Addr, pc)
	if err != nil {
		return fmt.Errorf("start the local OpenID provider: %w", err)
	}
	fmt.Fprintf(out, "local OpenID provider: issuer %s\n", p.Issuer)
	<-ctx.Done()
	return p.Close()
}
