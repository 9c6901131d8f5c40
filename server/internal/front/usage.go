package front

import (
	"context"
	"strings"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Bounds of a GetUsage range, in UTC days, both ends included.
const (
	// defaultUsageDays is the range an empty start_date gives: 30 days
	// ending with end_date.
	defaultUsageDays = 30
	// maxUsageDays bounds a range, so that one call reads at most a
	// year of day totals (a leap year's included).
	maxUsageDays = 366
)

// GetUsage reads the day totals the store keeps beside the events. The
// app must be served here: totals of an app this server does not host
// would be someone else's business (and a typo would read as "nothing
// spent").
func (d *Desk) GetUsage(ctx context.Context, req *servicev1.GetUsageRequest) (*servicev1.GetUsageResponse, error) {
	from, to, err := validateGetUsage(req, time.Now())
	if err != nil {
		return nil, err
	}
	if _, ok := d.apps.Lookup(req.GetAppName()); !ok {
		return nil, unknownApp(req.GetAppName())
	}
	// Until every store of the module keeps spend (store.Store then
	// embeds store.SpendStore), a store without it says so plainly
	// rather than answering "nothing spent".
	spend, ok := d.store.(store.SpendStore)
	if !ok {
		return nil, status.Error(codes.FailedPrecondition, "this server's store keeps no usage totals")
	}
	days, err := spend.ListSpend(ctx, req.GetAppName(), req.GetUserId(), from, to)
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	resp := &servicev1.GetUsageResponse{
		Days:      make([]*servicev1.DailyUsage, 0, len(days)),
		Total:     &agentrunnerv1.Spend{},
		StartDate: store.Day(from),
		EndDate:   store.Day(to),
	}
	for _, d := range days {
		resp.Days = append(resp.Days, &servicev1.DailyUsage{Date: d.Day, Model: d.Model, Spend: d.Spend})
		resp.Total = store.AddSpend(resp.Total, d.Spend)
	}
	return resp, nil
}

// validateGetUsage checks a GetUsage request and resolves its range
// against now: an empty end_date is now's UTC day, an empty start_date
// the 30-day range that ends on end_date. It returns the first and last
// day at UTC midnight.
func validateGetUsage(r *servicev1.GetUsageRequest, now time.Time) (from, to time.Time, err error) {
	if err := checkID("app_name", r.GetAppName()); err != nil {
		return from, to, err
	}
	// Empty is every user of the app, which authorization keeps to
	// principals allowed every user.
	if err := checkOptionalID("user_id", r.GetUserId()); err != nil {
		return from, to, err
	}
	to, err = usageDate("end_date", r.GetEndDate(), now.UTC().Truncate(24*time.Hour))
	if err != nil {
		return from, to, err
	}
	from, err = usageDate("start_date", r.GetStartDate(), to.AddDate(0, 0, -(defaultUsageDays-1)))
	if err != nil {
		return from, to, err
	}
	switch days := int(to.Sub(from)/(24*time.Hour)) + 1; {
	case from.After(to):
		return from, to, invalid("start_date", "%s is after end_date %s", store.Day(from), store.Day(to))
	case days > maxUsageDays:
		return from, to, invalid("start_date", "the range %s to %s is %d days, more than the limit of %d", store.Day(from), store.Day(to), days, maxUsageDays)
	}
	return from, to, nil
}

// usageDate parses a "YYYY-MM-DD" field as a UTC day; empty is def.
func usageDate(field, v string, def time.Time) (time.Time, error) {
	if v == "" {
		return def, nil
	}
	t, err := time.Parse(store.DayLayout, v)
	if err != nil {
		// time's message quotes the layout's pieces, which say little to
		// a caller; the field and the expected form say enough.
		if len(v) > maxIDBytes {
			v = strings.ToValidUTF8(v[:maxIDBytes], "") + "…" // not half a character
		}
		return t, invalid(field, "%q is not a date of the form YYYY-MM-DD", v)
	}
	return t, nil
}
