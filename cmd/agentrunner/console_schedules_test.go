package main

import (
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// TestConsoleSchedules: the Schedules view lists a schedule made through
// the API with its next firing, and, once it has fired, its last run,
// linked to the run's page.
func TestConsoleSchedules(t *testing.T) {
	browser(t) // skip before starting a server when there is no browser
	addr, console, _, _ := startConsole(t)
	created, err := servicev1.NewScheduleServiceClient(dial(t, addr)).CreateSchedule(t.Context(), &servicev1.CreateScheduleRequest{Schedule: &agentrunnerv1.Schedule{
		AppName: "slow", UserId: "ann", Cron: "@every 1s", NewMessage: userText("tick"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetSchedule().GetScheduleId()
	p := openTab(t, console, "schedules?app=slow&user=ann")
	row := `document.querySelector('#schedules tr[data-schedule="` + id + `"]')`
	p.wait("the schedule's row", row+` && `+row+`.querySelector(".next-fire").textContent !== "—"`, 20*time.Second)
	p.wait("its last run", row+`?.querySelector(".last-run a")`, 20*time.Second)
	p.shot("schedules")
	p.click(`#schedules tr[data-schedule="` + id + `"] .last-run a`)
	p.wait("the run's page", `location.pathname.includes("/runs/")`, 20*time.Second)
}
