package schedule

import (
	"fmt"
	"regexp"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// FieldError is a problem of one field of a schedule.
type FieldError struct {
	Field, Msg string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Msg }

// namePattern is what a schedule name of the apps file may be: it goes
// into the schedule's id, "APP/NAME".
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// CheckName validates the name of a schedule of the apps file.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return FieldError{"name", fmt.Sprintf("%q: want 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", name)}
	}
	return nil
}

// Check validates what a schedule needs to fire: app, cron and zone,
// owner, message. It returns every problem.
func Check(sc *agentrunnerv1.Schedule) []FieldError {
	var errs []FieldError
	if sc.GetAppName() == "" {
		errs = append(errs, FieldError{"app_name", "required"})
	}
	if sc.GetUserId() == "" {
		errs = append(errs, FieldError{"user_id", "required: the owner the runs are of"})
	}
	if strings.TrimSpace(sc.GetCron()) == "" {
		errs = append(errs, FieldError{"cron", "required"})
	} else if _, err := Parse(sc.GetCron(), sc.GetTimeZone()); err != nil {
		field := "cron"
		if _, zerr := loadZone(sc.GetTimeZone()); zerr != nil {
			field = "time_zone"
		}
		errs = append(errs, FieldError{field, err.Error()})
	}
	if len(sc.GetNewMessage().GetParts()) == 0 {
		errs = append(errs, FieldError{"new_message", "required: the message each run starts with"})
	}
	switch sc.GetMissedPolicy() {
	case agentrunnerv1.MissedPolicy_MISSED_POLICY_UNSPECIFIED, agentrunnerv1.MissedPolicy_MISSED_POLICY_SKIP, agentrunnerv1.MissedPolicy_MISSED_POLICY_RUN_ONCE:
	default:
		errs = append(errs, FieldError{"missed_policy", fmt.Sprintf("%d is not a policy", sc.GetMissedPolicy())})
	}
	return errs
}

// FromConfig returns the schedule that entry c of app's apps-file entry
// defines.
func FromConfig(app string, c *agentrunnerv1.ScheduleConfig) *agentrunnerv1.Schedule {
	sc := &agentrunnerv1.Schedule{
		ScheduleId: app + "/" + c.GetName(), AppName: app, Cron: c.GetCron(), TimeZone: c.GetTimeZone(),
		UserId: c.GetUserId(), SessionId: c.GetSessionId(), MissedPolicy: c.GetMissedPolicy(),
		Description: c.GetDescription(), Source: agentrunnerv1.ScheduleSource_SCHEDULE_SOURCE_APPS_FILE,
		Paused: c.GetPaused(),
	}
	if c.GetMessage() != "" {
		sc.NewMessage = &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: c.GetMessage()}}}}
	}
	return sc
}
