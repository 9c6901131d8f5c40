package pgstore_test

import (
	"testing"

	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/storetest"
)

func TestEvalRunsConformance(t *testing.T) {
	storetest.RunEvalRuns(t, func(t *testing.T) store.EvalRunStore { return openURL(t, pg.URL(t)) })
}
