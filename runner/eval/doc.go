// Package eval reads adk-python's eval files and scores conversations
// against them with ADK's metrics, so that an eval set written for
// `adk eval` gives the same numbers here.
//
//   - Load reads an .evalset.json (ADK's EvalSet: eval_set_id, eval_cases,
//     each a conversation of invocations with user_content, final_response
//     and intermediate_data.tool_uses, and a session_input) in snake_case or
//     ADK's camelCase aliases, and the older .test.json form (a list of
//     turns with query, expected_tool_use and reference).
//   - LoadConfig reads test_config.json criteria; DefaultCriteria are ADK's
//     defaults. Metrics it does not score are refused by name, with why.
//   - TrajectoryMatch is tool_trajectory_avg_score for one invocation
//     (EXACT, IN_ORDER, ANY_ORDER; arguments compared as Python compares
//     dicts), Rouge1 is response_match_score (rouge_score's ROUGE-1 with
//     its tokenizer and NLTK's Porter stemmer), and a Judge scores
//     rubric_based_final_response_quality_v1.
//   - ActualInvocation turns a run's events into the invocation that is
//     compared with the expected one; ScoreCase scores a case over repeats.
//
// Imports: the generated messages and the model interface. It must not
// import the runner, agents, tools, the store or gRPC: the server and the
// CLI run the cases, this package only reads and scores (runner/deps_test.go
// checks).
package eval
