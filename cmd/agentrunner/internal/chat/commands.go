package chat

import (
	"fmt"
	"strings"
)

// help is what /help shows, and an unknown command too.
const help = `Commands:
  /help        this help
  /session     the session's id, and how to resume it
  /quit        end the chat (also /exit)
  //text       send a message that starts with "/text"
Keys:
  Enter        send the message
  \ then Enter go on with the message on a new line
  paste        a pasted text is one message, whatever its length and lines
  Ctrl-C       clear the line; while an answer comes, stop the run (Esc too)
  Ctrl-D       on an empty line, end the chat
`

// command carries out line when it is a command (it starts with "/") and
// returns the message to send, if any, and whether the chat ends. A line
// that looks like a command and is none is never sent to the agent:
// "/sesion" is a typo, not a question.
func (c *chat) command(line string) (msg string, quit bool) {
	if !strings.HasPrefix(line, "/") {
		return line, false
	}
	if strings.HasPrefix(line, "//") {
		return line[1:], false
	}
	switch name, _, _ := strings.Cut(line, " "); name {
	case "/quit", "/exit":
		return "", true
	case "/session":
		fmt.Fprintf(c.out, "session %s (app %s, user %s; resume with --session %s)\n", c.session, c.app, c.user, c.session)
	case "/help":
		fmt.Fprint(c.out, help)
	default:
		fmt.Fprintf(c.out, "unknown command %s; nothing was sent.\n%s", name, help)
	}
	return "", false
}
