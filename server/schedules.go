package server

import (
	"log/slog"

	"github.com/agentrunner/agentrunner/runner/schedule"
)

// NewScheduler returns the scheduler of the server's schedules (the apps
// file's and the API's): each time claimed in the server's store under
// holder's name, fired through the front desk's admission as the
// schedule's owner. Its Run is the caller's to start and stop.
func (s *Server) NewScheduler(holder string, log *slog.Logger) (*schedule.Scheduler, error) {
	ss, err := s.desk.ScheduleStore()
	if err != nil {
		return nil, err
	}
	return schedule.New(schedule.Config{
		Store: ss, Schedules: s.desk.AllSchedules, Fire: s.desk.FireSchedule,
		Holder: holder, Logger: log,
	}), nil
}
