/** Explains the data and results files, for `lagent eval --help`. */
export const EVAL_HELP = `
Each data line is a JSON object with the question in "input" (or "question", "prompt", "message": a string,
a message object or a list of them) and the expected answer in "expected" (or "answer", "target"). An "id"
(string or number) names the item; without one, its line number does (so give ids if lines may move).
Other fields are kept for a scorer module.

Scorers (--scorer, once or more; the first is "score" and "accuracy"):
  exact       the reply, trimmed, equals the expected answer, trimmed (case counts)
  includes    the reply contains the expected answer, ignoring case
  ./file.js   a module whose default export (or "score") is (reply, expected, line) => boolean | number
              from 0 to 1, sync or async; "line" is the whole data line. Results name it by its exported
              "name", else by its path relative to the current directory
  --judge R   an LLM judge (named "judge") grades each reply against the rubric R (text, or @file) from 0
              to 1 with a reason; --judge-model (default: the agent's model), --judge-base-url and
              --judge-api-key (default: the agent's). What it spends is counted apart from the agent
  With exact and includes, "expected" may be a list: any of its answers matches.

Each results line is {"id"?, "line", "input", "expected", "scorer", "reply", "score", "scores", "reasons"?,
"latencyMs", "usage", "judgeUsage"?, "error"}; "scores" has every scorer's score by name; "error" is null or
{"stage": "input" | "agent" | "scorer", "name", "message"}. Each call is made with budget: {} so the agent
reports its tokens and cost (models without a price are named in the summary). A run skips the items already
scored in the results file (the last line of an item counts) and runs the others again; a reply that a scorer
failed on, or that a scorer of this run has not scored, is only scored again (no agent call).
The summary covers every item of the data file: a table on stderr, and one JSON line on stdout (also written
to --summary-json). Accuracy is the mean score over the items done (an item with an error counts 0); "left"
says how many a stopped run did not do. Items below --pass-score (default 1) or with an error are listed
with a diff of the expected answer and the reply (--show-failures), and fail in the --junit report.
--compare an earlier results file lists the items that got better or worse. --threshold 0.8 (the first
scorer) or name=0.8 (repeatable) sets the least accuracy. Exit code: 0 passed, 1 below a threshold, 2 when
some items have an error, 130 when stopped.`;
