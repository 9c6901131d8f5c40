package store

import "fmt"

// KeyCheck is a store's own check of the strings its keys are made of.
// What makes a key valid is the same in every store, but what a backend
// can hold is not (bbolt takes any bytes, PostgreSQL's text neither a NUL
// byte nor invalid UTF-8), so the shared checks below take the store's.
// It takes one part at a time: a variadic func value would put its
// arguments on the heap at every call, on the path of every append.
type KeyCheck func(part string) error

// checkAll applies check to each part.
func checkAll(check KeyCheck, parts ...string) error {
	for _, p := range parts {
		if err := check(p); err != nil {
			return err
		}
	}
	return nil
}

// ValidateKey checks that k names a session (Validate) whose parts the
// store can hold.
func ValidateKey(k SessionKey, check KeyCheck) error {
	if err := k.Validate(); err != nil {
		return err
	}
	return checkAll(check, k.App, k.User, k.Session)
}

// CheckSessionList validates the arguments of ListSessions, and those of
// the spend ledger's reads: the app is required, the user optional (all
// users) where the call allows it.
func CheckSessionList(app, user string, check KeyCheck) error {
	if app == "" {
		return fmt.Errorf("app_name is empty: %w", ErrInvalidArgument)
	}
	return checkAll(check, app, user)
}

// CheckRequestKey validates the arguments of FindRunByRequest: a session
// and a request_id within it.
func CheckRequestKey(k SessionKey, requestID string, check KeyCheck) error {
	if err := ValidateKey(k, check); err != nil {
		return err
	}
	if requestID == "" {
		return fmt.Errorf("request_id is empty: %w", ErrInvalidArgument)
	}
	return check(requestID)
}
