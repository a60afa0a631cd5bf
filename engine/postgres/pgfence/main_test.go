package pgfence_test

import (
	"os"
	"testing"

	"github.com/distlock/distlock/engine/postgres/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, nil)) }
