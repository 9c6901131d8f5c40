package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// The daily spend ledger (store.SpendStore): table spend (migration
// 0006), two rows of which every append of an event with usage adds to
// in its transaction, the user's and the app's (allUsers).

// allUsers is the user_id of the app's totals: no session's user is
// empty (SessionKey.Validate refuses it).
const allUsers = ""

// spendShards is how many rows each total is split over (see the
// migration): appends of different sessions wait on each other's commit
// only when their sessions hash to the same shard. Reads sum at most
// this many rows per day and model.
const spendShards = 64

// spendShard is session's shard, the same for all its appends: its
// id's FNV-1a hash (written out: hash/fnv would allocate per append).
func spendShard(session string) int16 {
	h := uint32(2166136261)
	for i := 0; i < len(session); i++ {
		h ^= uint32(session[i])
		h *= 16777619
	}
	return int16(h % spendShards)
}

// sqlAddSpend adds one model call to the user's row ($2) and the app's,
// in that order (see the migration: the order every append locks them
// in). One statement with two rows: one entry of a pipelined batch.
const sqlAddSpend = `INSERT INTO spend AS t (app_name, user_id, day, model,
		prompt_tokens, candidates_tokens, thoughts_tokens, cached_content_tokens, tool_use_prompt_tokens, total_tokens, cache_creation_tokens,
		micros, unpriced_calls, currency, calls, shard)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 1, $15),
		($1, '', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 1, $15)
	` + spendConflict

// sqlAddSpendRow adds $16 model calls to one row: a batch's sums
// (batch.go), one statement a row, the rows in the order of spendCompare.
const sqlAddSpendRow = `INSERT INTO spend AS t (app_name, user_id, day, model,
		prompt_tokens, candidates_tokens, thoughts_tokens, cached_content_tokens, tool_use_prompt_tokens, total_tokens, cache_creation_tokens,
		micros, unpriced_calls, currency, calls, shard)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $16, $15)
	` + spendConflict

// spendConflict adds a row's counts to the row already there.
const spendConflict = `ON CONFLICT (app_name, user_id, day, model, shard) DO UPDATE SET
		prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens,
		candidates_tokens = t.candidates_tokens + EXCLUDED.candidates_tokens,
		thoughts_tokens = t.thoughts_tokens + EXCLUDED.thoughts_tokens,
		cached_content_tokens = t.cached_content_tokens + EXCLUDED.cached_content_tokens,
		tool_use_prompt_tokens = t.tool_use_prompt_tokens + EXCLUDED.tool_use_prompt_tokens,
		total_tokens = t.total_tokens + EXCLUDED.total_tokens,
		cache_creation_tokens = t.cache_creation_tokens + EXCLUDED.cache_creation_tokens,
		micros = t.micros + EXCLUDED.micros,
		unpriced_calls = t.unpriced_calls + EXCLUDED.unpriced_calls,
		currency = CASE WHEN t.currency = '' THEN EXCLUDED.currency ELSE t.currency END,
		calls = t.calls + EXCLUDED.calls`

// spendSums sums a group's shards into what scanSpend reads. The
// currency is the same in every shard that has one (an apps file prices
// every model in one currency); ” sorts first, so max finds it.
const spendSums = `sum(prompt_tokens)::bigint, sum(candidates_tokens)::bigint, sum(thoughts_tokens)::bigint,
	sum(cached_content_tokens)::bigint, sum(tool_use_prompt_tokens)::bigint, sum(total_tokens)::bigint,
	sum(cache_creation_tokens)::bigint, sum(micros)::bigint, sum(unpriced_calls)::bigint, max(currency), sum(calls)::bigint`

// spendArgs returns the arguments of sqlAddSpend for ev, with usage,
// stored in session k on day. Counts are the non-negative ones
// store.AddUsage sums: no append takes anything off the ledger.
func spendArgs(k store.SessionKey, ev *agentrunnerv1.Event, day time.Time) []any {
	u := store.AddUsage(nil, ev.GetUsageMetadata())
	c := store.AddEventCost(nil, ev) // an unpriced call when ev has no cost
	return []any{k.App, k.User, dayDate(day), store.SpendModel(ev),
		int64(u.GetPromptTokenCount()), int64(u.GetCandidatesTokenCount()), int64(u.GetThoughtsTokenCount()),
		int64(u.GetCachedContentTokenCount()), int64(u.GetToolUsePromptTokenCount()), store.EventTokens(ev),
		int64(u.GetCacheCreationTokenCount()), c.GetMicros(), c.GetUnpricedCalls(), c.GetCurrency(), spendShard(k.Session)}
}

// addSpend adds w's event, stored as ev, to the ledger in tx (the
// statement-by-statement append, appendTx), when its usage counts.
func addSpend(ctx context.Context, tx pgx.Tx, k store.SessionKey, ev *agentrunnerv1.Event, w eventWrite) error {
	if !w.counted {
		return nil
	}
	if _, err := tx.Exec(ctx, sqlAddSpend, spendArgs(k, ev, w.day)...); err != nil {
		return fmt.Errorf("add spend: %w", err)
	}
	return nil
}

// dayDate is t's UTC day (store.Day) as a date parameter: midnight UTC.
func dayDate(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// scanSpend reads spendSums, after the dest given before them. A row
// holds at least one call: its usage and cost are set, as
// store.AddEventSpend sets them.
func scanSpend(row pgx.CollectableRow, dest ...any) (*agentrunnerv1.Spend, error) {
	var n [9]int64
	var currency string
	var calls int64
	dest = append(dest, &n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6], &n[7], &n[8], &currency, &calls)
	if err := row.Scan(dest...); err != nil {
		return nil, fmt.Errorf("read spend: %w", err)
	}
	// Token counts are int32 in UsageMetadata; a sum past it wraps, as
	// store.AddUsage's does. TotalTokens does not.
	return &agentrunnerv1.Spend{
		TotalTokens: n[5],
		Usage: &agentrunnerv1.UsageMetadata{
			PromptTokenCount: int32(n[0]), CandidatesTokenCount: int32(n[1]), ThoughtsTokenCount: int32(n[2]),
			CachedContentTokenCount: int32(n[3]), ToolUsePromptTokenCount: int32(n[4]), TotalTokenCount: int32(n[5]),
			CacheCreationTokenCount: int32(n[6]),
		},
		Cost:       &agentrunnerv1.Cost{Currency: currency, Micros: n[7], UnpricedCalls: n[8]},
		ModelCalls: calls,
	}, nil
}

// DailySpend implements store.SpendStore: the user's and the app's rows
// of the day, their shards summed by model, then the models in name
// order, as boltstore sums them.
func (s *Store) DailySpend(ctx context.Context, app, user string, day time.Time) (userSpend, appSpend *agentrunnerv1.Spend, err error) {
	if user == "" {
		return nil, nil, fmt.Errorf("user_id is empty: %w", store.ErrInvalidArgument)
	}
	if err := store.CheckSessionList(app, user, checkPart); err != nil {
		return nil, nil, err
	}
	userSpend, appSpend = &agentrunnerv1.Spend{}, &agentrunnerv1.Spend{}
	err = s.query(ctx, func() error {
		rows, err := s.pool.Query(ctx, `SELECT user_id, `+spendSums+` FROM spend
			WHERE app_name = $1 AND user_id IN ($2, '') AND day = $3 GROUP BY user_id, model ORDER BY user_id, model`, app, user, dayDate(day))
		if err != nil {
			return fmt.Errorf("read spend: %w", err)
		}
		_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
			var u string
			sp, err := scanSpend(row, &u)
			if err != nil {
				return struct{}{}, err
			}
			if u == allUsers {
				store.AddSpend(appSpend, sp)
			} else {
				store.AddSpend(userSpend, sp)
			}
			return struct{}{}, nil
		})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return userSpend, appSpend, nil
}

// ListSpend implements store.SpendStore: one range of the primary key,
// its shards summed by day and model.
func (s *Store) ListSpend(ctx context.Context, app, user string, from, to time.Time) ([]store.DaySpend, error) {
	if err := store.CheckSessionList(app, user, checkPart); err != nil {
		return nil, err
	}
	var out []store.DaySpend
	err := s.query(ctx, func() error {
		rows, err := s.pool.Query(ctx, `SELECT day, model, `+spendSums+` FROM spend
			WHERE app_name = $1 AND user_id = $2 AND day BETWEEN $3 AND $4 GROUP BY day, model ORDER BY day, model`,
			app, user, dayDate(from), dayDate(to))
		if err != nil {
			return fmt.Errorf("list spend: %w", err)
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.DaySpend, error) {
			var (
				day   time.Time
				model string
			)
			sp, err := scanSpend(row, &day, &model)
			return store.DaySpend{Day: store.Day(day), Model: model, Spend: sp}, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
