package pg_test

import (
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
