package a2a

import (
	"cmp"

	"github.com/a2aproject/a2a-go/v2/a2a"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// CardURLs are where an app's bindings are: the HTTP ones under HTTPBase
// (…/a2a/{app}), the gRPC one at GRPC (host:port; "" for none).
type CardURLs struct {
	HTTPBase, GRPC string
}

// Security scheme names on the cards.
const (
	SchemeBearer = "bearer"
	SchemeMTLS   = "mtls"
)

// Card returns the agent card of app: its name and description, one skill
// per agent of its tree (with the agent's tools as tags), streaming on and
// push notifications off, the schemes the auth file implies, and the URL
// of each binding (the gRPC one names the app as its tenant).
func (h *Handler) Card(app string, urls CardURLs, cfg HTTPConfig) (*a2a.AgentCard, bool) {
	var info *agentrunnerv1.App
	for _, a := range h.s.Apps().List() {
		if a.GetName() == app {
			info = a
		}
	}
	if info == nil {
		return nil, false
	}
	card := &a2a.AgentCard{
		Name:               app,
		Description:        cmp.Or(info.GetDescription(), info.GetRootAgent().GetDescription(), "agentrunner app "+app),
		Version:            cmp.Or(cfg.Version, "dev"),
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             skills(info.GetRootAgent(), nil),
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: urls.HTTPBase + JSONRPCPath, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: urls.HTTPBase + RESTPath, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2a.Version},
		},
	}
	if urls.GRPC != "" {
		card.SupportedInterfaces = append(card.SupportedInterfaces,
			&a2a.AgentInterface{URL: urls.GRPC, ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: a2a.Version, Tenant: app})
	}
	if cfg.Auth != nil {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{}
		card.SecuritySchemes[SchemeBearer] = a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "a token of the server's auth file; X-Agentrunner-User names the user to act as when the principal has several"}
		card.SecurityRequirements = a2a.SecurityRequirementsOptions{{SchemeBearer: {}}}
		if cfg.MTLS && cfg.Auth.HasMTLS() {
			card.SecuritySchemes[SchemeMTLS] = a2a.MutualTLSSecurityScheme{Description: "a client certificate whose CN or SAN is a principal's mtls_identity"}
			card.SecurityRequirements = append(card.SecurityRequirements, a2a.SecurityRequirements{SchemeMTLS: {}})
		}
	}
	return card, true
}

// skills lists an agent tree as skills, root first: each agent's
// description, with its tools' names as tags.
func skills(ag *agentrunnerv1.AgentInfo, out []a2a.AgentSkill) []a2a.AgentSkill {
	if ag == nil {
		return out
	}
	s := a2a.AgentSkill{ID: ag.GetName(), Name: ag.GetName(), Description: cmp.Or(ag.GetDescription(), "agent "+ag.GetName()), Tags: []string{"agent"}}
	for _, t := range ag.GetToolDetails() {
		s.Tags = append(s.Tags, "tool:"+t.GetName())
	}
	if len(ag.GetToolDetails()) == 0 {
		for _, t := range ag.GetTools() {
			s.Tags = append(s.Tags, "tool:"+t)
		}
	}
	out = append(out, s)
	for _, sub := range ag.GetSubAgents() {
		out = skills(sub, out)
	}
	return out
}
