/** Explains the data and results files, for `lagent eval --help`. */
export const EVAL_HELP = `
Each data line is a JSON object with the question in "input" (or "question", "prompt", "message": a string,
a message object or a list of them) and the expected answer in "expected" (or "answer", "target"). An "id"
(string or number) names the item; without one, its line number does (so give ids if lines may move).
Other fields are kept for a scorer module.

Scorers (--scorer):
  exact       the reply, trimmed, equals the expected answer, trimmed (case counts)
  includes    the reply contains the expected answer, ignoring case
  ./file.js   a module whose default export (or "score") is (reply, expected, line) => boolean | number
              from 0 to 1, sync or async; "line" is the whole data line
  With exact and includes, "expected" may be a list: any of its answers matches.

Each results line is {"id"?, "line", "input", "expected", "scorer", "reply", "score", "latencyMs", "usage",
"error"}; "error" is null or {"stage": "input" | "agent" | "scorer", "name", "message"}. A run skips the
items already scored in the results file (the last line of an item counts) and runs the others again; a
reply that the scorer failed on, or that another --scorer scored, is only scored again (no agent call).
The summary covers every item of the data file: a table on stderr, and one JSON line on stdout (also
written to --summary-json). Accuracy is the sum of the scores over all items (an item with an error
counts 0); tokens come from each reply's extraInfo.usage, or else from the agent's models; the cost shows
only when every answered item reported it. Exit code: 0 when every item was scored, 2 when some have an
error, 130 when stopped.`;
