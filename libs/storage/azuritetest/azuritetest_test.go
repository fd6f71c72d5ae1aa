package azuritetest_test

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/plinth-dev/plinth/libs/storage/azuritetest"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/azureblob"
)

// TestServerLifecycle: containers are created fresh and valid, and the emulator is gone
// once the test that started it ends.
func TestServerLifecycle(t *testing.T) {
	var host string
	t.Run("running", func(t *testing.T) {
		srv := azuritetest.Start(t)
		u, err := url.Parse(srv.Endpoint)
		if err != nil || u.Path != "/"+azuritetest.Account {
			t.Fatalf("endpoint %q", srv.Endpoint)
		}
		host = u.Host
		a, b := srv.Container(t), srv.Container(t)
		if a == b || azureblob.ValidateContainer(a) != nil {
			t.Fatalf("containers %q, %q", a, b)
		}
		cc, err := container.NewClientFromConnectionString(srv.ConnectionString(), a, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := cc.GetProperties(ctx, nil); err != nil {
			t.Fatalf("the container is not there: %v", err)
		}
	})
	if host == "" {
		return // skipped
	}
	if c, err := net.DialTimeout("tcp", host, time.Second); err == nil {
		_ = c.Close()
		t.Fatalf("azurite still listens on %s after its test ended", host)
	}
}

func TestContainerNameIsValid(t *testing.T) {
	for _, name := range []string{"x", "a_very_long_test_name_with_UPPER_case_and__double_underscores_that_goes_on_and_on"} {
		t.Run(name, func(t *testing.T) {
			if c := azuritetest.ContainerName(t); azureblob.ValidateContainer(c) != nil {
				t.Fatalf("%q: %v", c, azureblob.ValidateContainer(c))
			}
		})
	}
}
