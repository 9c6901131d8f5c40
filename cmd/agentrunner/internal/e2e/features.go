package e2e

// Features are the end-to-end tests every target runs: features of the
// whole binary that need only its clients (gRPC and the CLI), not the
// process itself (kill -9, flags, crashes and the HTTP front door stay in
// cmd/agentrunner's own tests).
var Features = []Feature{
	{"RunsListGetAttach", runsListGetAttach},
	{"RunBudgetStopsLoop", runBudgetStopsLoop},
	{"UserDailyBudget", userDailyBudget},
	{"SessionBudget", sessionBudget},
	{"ClientCannotRewriteSpend", clientCannotRewriteSpend},
	{"EventsKeepWhatTheModelReturns", eventsKeepWhatTheModelReturns},
}
