package pgstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/pgstore"
	"github.com/agentrunner/agentrunner/store/pgstore/pgtest"
	"github.com/agentrunner/agentrunner/store/storetest"
)

// pg is this test binary's PostgreSQL cluster, started by the first test
// that needs it.
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }

// open opens a store on a new database of the test cluster.
func open(t *testing.T, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), pg.URL(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, pgstore.Options{}) })
}

var _ = context.Background
