import { constants, type Stats, type WriteStream } from 'node:fs';
import { type FileHandle, lstat, open, readFile, stat } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { AgentMessage, type MessageInput } from '../schema/agent-message';
import { type Decision, interruptsOf, resumeWith } from '../schema/interrupts';
import type { SessionId } from '../schema/session';
import { isPlainObject } from '../utils/is';
import { type AgentLike, runAgent } from './agent-like';
import { CliError, messageOf } from './errors';
import { rawMember } from './json-member';
import { createProgress } from './progress';

/** Options of {@link runBatch}. */
export interface BatchOptions {
  /** The input JSONL file: one `{ "id": ..., "message": ... }` object per line. */
  input: string;
  /** The output JSONL file: one `{ id, message }` per answered line, appended to (resumable). */
  output: string;
  /** Where failures go, one `{ id?, line, error }` per line. @default the output's name with `.errors.jsonl` */
  errors?: string | undefined;
  /** Lines in flight at once. @default 4 */
  concurrency?: number | undefined;
  /** Show progress (a bar on a terminal, a line every few seconds otherwise). @default true */
  progress?: boolean | undefined;
  /** Where progress and the summary go. @default process.stderr */
  log?: (NodeJS.WritableStream & { isTTY?: boolean | undefined }) | undefined;
  /** Stops the run: calls in flight are aborted and not recorded, so the next run does them. */
  signal?: AbortSignal | undefined;
}

/** What a batch run did. */
export interface BatchSummary {
  /** Lines answered in this run. */
  done: number;
  /**
   * Lines whose reply is an interrupt (a tool call waiting for approval), from this run or an earlier one:
   * recorded in the output with their `interrupts`, and continued by a run whose input line has `decisions`.
   */
  waiting: number;
  /** Lines that failed in this run (the agent's error, a malformed line, a duplicate id). */
  failed: number;
  /** Lines skipped because their id is already in the output. */
  skipped: number;
  /** Whether the run was stopped before the end. */
  interrupted: boolean;
}

/**
 * A line's id as its JSON text: a number exactly as written (`1e400`, a 20-digit id), a string in
 * `JSON.stringify`'s form. Two lines are the same id only when these texts are equal, so `1` and `"1"` differ.
 */
interface LineId {
  json: string;
  /** The line's session: a string id as it is, a number id as its text; a string id that would read as one of those is quoted. */
  session: SessionId;
}

/** One line to run. */
interface Task {
  line: number;
  id: LineId;
  message: MessageInput | MessageInput[];
  /** The line's `decisions`: the answers to its interrupts. */
  decisions?: Decision[] | undefined;
  /** Set when an earlier run left the line waiting: what it recorded, to continue from. */
  paused?: Paused | undefined;
}

/** A line the output records as waiting for decisions: the session's state dict when it was recorded. */
interface Paused {
  state: unknown;
}

/** What the output already holds: ids answered, and ids waiting for decisions (the last record of an id wins). */
interface Recorded {
  answered: Set<string>;
  paused: Map<string, Paused>;
}

/** One line of the errors file. */
interface Failure {
  line: number;
  /** The id's JSON text. */
  id?: string | undefined;
  error: string;
  /** The error's class name (`LLMRequestError`, ...), or `InvalidLine` for a line that cannot run. */
  name: string;
  /** The line as it was, for a malformed one (cut at 1000 characters). */
  input?: string | undefined;
}

/** The default errors file of an output file: `out.jsonl` → `out.errors.jsonl`. */
export function defaultErrorsPath(output: string): string {
  return output.endsWith('.jsonl')
    ? `${output.slice(0, -'.jsonl'.length)}.errors.jsonl`
    : `${output}.errors.jsonl`;
}

/** A text that reads as a JSON number (a number id's session), or starts with a quote (a quoted string id's). */
const AMBIGUOUS = /^(?:"|-?\d)/;

/** The id of a parsed line, read from the line's text so that numbers keep their digits; undefined when it has none. */
function lineId(record: Record<string, unknown>, text: string): LineId | undefined {
  const { id } = record;
  if (typeof id === 'string') {
    const json = JSON.stringify(id);
    return { json, session: AMBIGUOUS.test(id) ? json : id };
  }
  if (typeof id !== 'number') return undefined;
  const raw = rawMember(text, 'id');
  return raw === undefined ? undefined : { json: raw, session: raw };
}

/** `record` as a JSON line whose `id` is the id's own JSON text. */
function recordText(id: string | undefined, record: Record<string, unknown>): string {
  const body = JSON.stringify(record);
  if (id === undefined) return body;
  return body === '{}' ? `{"id":${id}}` : `{"id":${id},${body.slice(1)}`;
}

/** One output line: its id, and what it left waiting when it is an interrupt; undefined when not a whole record. */
function outputRecord(text: string): { id: string; paused?: Paused | undefined } | undefined {
  try {
    const record = JSON.parse(text) as unknown;
    if (!isPlainObject(record)) return undefined;
    const id = lineId(record, text)?.json;
    if (id === undefined) return undefined;
    return Array.isArray(record.interrupts) ? { id, paused: { state: record.state } } : { id };
  } catch {
    return undefined;
  }
}

/**
 * The ids already answered in the output file. A last line without its newline was cut short by a crash while
 * it was written: a whole record gets its newline, anything else is cut off, so its line runs again and the
 * file stays one record per line.
 */
async function answeredIds(output: FileHandle): Promise<Recorded> {
  const recorded: Recorded = { answered: new Set(), paused: new Map() };
  const note = (record: ReturnType<typeof outputRecord>) => {
    if (record === undefined) return;
    if (record.paused === undefined) {
      recorded.answered.add(record.id);
      recorded.paused.delete(record.id);
    } else {
      recorded.answered.delete(record.id);
      recorded.paused.set(record.id, record.paused);
    }
  };
  const bytes = await output.readFile();
  const end = bytes.lastIndexOf(0x0a) + 1;
  for (const line of bytes.subarray(0, end).toString('utf8').split('\n')) {
    if (line.trim() === '') continue;
    note(outputRecord(line));
  }
  if (end < bytes.length) {
    const record = outputRecord(bytes.subarray(end).toString('utf8'));
    if (record === undefined) await output.truncate(end);
    else {
      note(record);
      // The file is open for appending: this lands at its end.
      await output.write('\n');
    }
  }
  return recorded;
}

/** Whether two stats are of one file (a hard link, or a symbolic link followed, included). */
function sameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/**
 * A file the run writes (the output, appended to and read back; the errors file), opened for appending without
 * following a symbolic link (`O_NOFOLLOW`) and without blocking (`O_NONBLOCK`), then checked to be a regular
 * file other than the `others` (the input, the output): a FIFO, a device such as `/dev/stdout`, a link or
 * another name of the input is refused before anything is written or truncated. The file is created when missing.
 */
async function openForWriting(
  path: string,
  what: string,
  others: readonly { stats: Stats; what: string }[],
): Promise<FileHandle> {
  const refuse = (why: string) => new CliError(`${what} ${path} ${why}`);
  const existing = await lstat(path).catch(() => undefined);
  // Checked before opening too, so that nothing is created for a refused name.
  if (existing?.isSymbolicLink())
    throw refuse('is a symbolic link: name the file itself (lagent batch does not write through links)');
  if (existing !== undefined && !existing.isFile())
    throw refuse('is not a regular file (a FIFO, a device or a directory cannot be written and read back)');
  for (const other of others) {
    if (existing !== undefined && sameFile(existing, other.stats)) throw refuse(`is also the ${other.what}`);
  }
  let handle: FileHandle;
  try {
    handle = await open(
      path,
      constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK,
      0o644,
    );
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ELOOP') throw refuse('is a symbolic link: name the file itself');
    if (code === 'ENXIO' || code === 'EISDIR') throw refuse('is not a regular file');
    throw new CliError(`cannot open ${path}: ${messageOf(error)}`, { cause: error });
  }
  // The name may have changed between the check and the open: what was opened is checked again.
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) throw refuse('is not a regular file');
    for (const other of others) if (sameFile(opened, other.stats)) throw refuse(`is also the ${other.what}`);
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Checks one message of a line; a message object is read as Lagent's JSON (snake_case) or lagent-ts's. */
function readMessage(value: unknown): MessageInput {
  if (typeof value === 'string') return value;
  if (isPlainObject(value)) return AgentMessage.from(value);
  throw new Error(`"message" must be a string, a message object or a list of them, got ${typeof value}`);
}

/** Parses one input line into a task, or says why it cannot run. */
function readLine(text: string, line: number): Task | Failure {
  const invalid = (error: string, id?: LineId) => ({
    line,
    ...(id === undefined ? {} : { id: id.json }),
    error,
    name: 'InvalidLine',
    input: text.length > 1000 ? `${text.slice(0, 1000)}...` : text,
  });
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch (error) {
    return invalid(`malformed JSON: ${messageOf(error)}`);
  }
  if (!isPlainObject(record)) return invalid('a line must be a JSON object with "id" and "message"');
  const id = lineId(record, text);
  if (id === undefined) return invalid('"id" is missing (a string or a number)');
  const { message } = record;
  if (message === undefined) return invalid('"message" is missing', id);
  try {
    const parsed = Array.isArray(message) ? message.map(readMessage) : readMessage(message);
    if (Array.isArray(parsed) && parsed.length === 0) return invalid('"message" is an empty list', id);
    if (record.decisions === undefined) return { line, id, message: parsed };
    if (!Array.isArray(record.decisions)) return invalid('"decisions" must be a list of { id, approve }', id);
    const decisions = (resumeWith(record.decisions as Decision[]).formatted as { decisions: Decision[] })
      .decisions;
    return { line, id, message: parsed, decisions };
  } catch (error) {
    return invalid(messageOf(error), id);
  }
}

function isTask(value: Task | Failure): value is Task {
  return !('error' in value);
}

function write(stream: WriteStream, id: string | undefined, record: Record<string, unknown>): void {
  stream.write(`${recordText(id, record)}\n`);
}

function writeFailure(stream: WriteStream, { id, ...rest }: Failure): void {
  write(stream, id, rest);
}

function end(stream: WriteStream): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('error', reject);
    stream.end(resolve);
  });
}

/** The text of a file the command reads (`what` names it in the error of a missing or unreadable one). */
export async function readInputFile(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new CliError(
      code === 'ENOENT' ? `${what} not found: ${path}` : `cannot read ${path}: ${messageOf(error)}`,
    );
  }
}

/**
 * `lagent batch`: runs the agent on every line of a JSONL file, `concurrency` lines at a time, each on its own
 * session (the line's id), and appends `{ id, message }` per answer to the output (the reply in Lagent's JSON
 * shape). Ids already in the output are skipped, so a stopped run continues where it was; a last output line
 * that a crash cut short is removed first, and its line runs again. An id is its JSON text, written back as it
 * came (`1e400` and 20-digit numbers keep their digits; `1` and `"1"` are two ids on two sessions). Failures,
 * malformed lines and duplicate ids go to the errors file (rewritten by each run: failed lines run again).
 *
 * A line whose reply is an interrupt (a tool call waiting for approval) is neither answered nor failed: its
 * output record is `{ id, message, interrupts, state }` (the interrupt reply, its interrupts, and the session's
 * state dict) and it counts as `waiting`. A later run continues it when its input line carries `"decisions":
 * [{ "id", "approve", ... }]` (the answers to its interrupts): the state is loaded into the line's session and
 * the decisions sent as a resume message; the new record is appended, so an id's last record is its current
 * one. A line without decisions stays waiting; a line given decisions before it ever ran applies them to
 * the interrupt it meets.
 */
export async function runBatch(agent: AgentLike, options: BatchOptions): Promise<BatchSummary> {
  const concurrency = options.concurrency ?? 4;
  const log = options.log ?? process.stderr;
  const errorsPath = options.errors ?? defaultErrorsPath(options.output);
  if (resolvePath(options.output) === resolvePath(options.input)) {
    throw new CliError('the output file must not be the input file');
  }
  if (
    resolvePath(errorsPath) === resolvePath(options.output) ||
    resolvePath(errorsPath) === resolvePath(options.input)
  ) {
    throw new CliError('--errors must name another file than the input and the output');
  }
  const text = await readInputFile(options.input, 'input file');
  const input = { stats: await stat(options.input), what: 'input file' };
  const outputFile = await openForWriting(options.output, 'the output file', [input]);
  let errorsFile: FileHandle | undefined;
  let recorded: Recorded;
  try {
    errorsFile = await openForWriting(errorsPath, 'the errors file', [
      input,
      { stats: await outputFile.stat(), what: 'output file' },
    ]);
    // Reading what is answered also repairs a last line a crash cut short.
    recorded = await answeredIds(outputFile);
  } catch (error) {
    await Promise.all([outputFile.close(), errorsFile?.close()]);
    throw error;
  }
  const { answered, paused } = recorded;
  const failures: Failure[] = [];
  const tasks: Task[] = [];
  const seen = new Set<string>();
  let skipped = 0;
  let waiting = 0;
  text.split('\n').forEach((raw, index) => {
    const trimmed = raw.trim();
    if (trimmed === '') return;
    const parsed = readLine(trimmed, index + 1);
    if (!isTask(parsed)) {
      failures.push(parsed);
      return;
    }
    const key = parsed.id.json;
    if (seen.has(key)) {
      failures.push({ line: parsed.line, id: key, error: `duplicate id ${key}`, name: 'InvalidLine' });
      return;
    }
    seen.add(key);
    const earlier = paused.get(key);
    if (answered.has(key)) skipped++;
    else if (earlier === undefined) tasks.push(parsed);
    else if (parsed.decisions === undefined) waiting++;
    else tasks.push({ ...parsed, paused: earlier });
  });

  const output = outputFile.createWriteStream();
  // Rewritten by each run: only now, once it is known to be none of the other files.
  await errorsFile.truncate(0);
  const errors = errorsFile.createWriteStream();
  for (const failure of failures) writeFailure(errors, failure);

  const progress = await createProgress('batch', 'failed', tasks.length, log, options.progress ?? true);
  const signal = options.signal;
  let done = 0;
  let failed = 0;
  let next = 0;
  const run = async (task: Task) => {
    const sessionId = task.id.session;
    try {
      const reply = await runLine(agent, task, sessionId, signal);
      const interrupts = interruptsOf(reply);
      if (interrupts.length === 0) {
        write(output, task.id.json, { message: reply.toJSON({ format: 'lagent' }) });
        done++;
      } else {
        // The session is freed below: its state goes with the record, for the run that brings decisions.
        const state = await agent.stateDict(sessionId);
        write(output, task.id.json, { message: reply.toJSON({ format: 'lagent' }), interrupts, state });
        waiting++;
      }
    } catch (error) {
      if (signal?.aborted) return;
      writeFailure(errors, {
        line: task.line,
        id: task.id.json,
        error: messageOf(error),
        name: error instanceof Error ? error.name : 'Error',
      });
      failed++;
    } finally {
      try {
        await agent.reset?.(sessionId);
      } catch {
        // freeing the session's memory is best effort
      }
    }
    progress.update(done + failed, failed);
  };
  const lane = async () => {
    while (next < tasks.length && !signal?.aborted) await run(tasks[next++]!);
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, lane));
  } finally {
    progress.stop();
    await Promise.all([end(output), end(errors)]);
  }
  const interrupted = signal?.aborted === true && done + failed < tasks.length;
  const invalid = failures.length;
  const parts = [
    `${done} done`,
    `${failed + invalid} failed${invalid > 0 ? ` (${invalid} invalid line${invalid === 1 ? '' : 's'})` : ''}`,
  ];
  if (waiting > 0)
    parts.push(`${waiting} waiting for approval (give their input lines "decisions" and run again)`);
  if (skipped > 0) parts.push(`${skipped} already in ${options.output}`);
  const where = failed + invalid > 0 ? `; failures in ${errorsPath}` : '';
  log.write(`batch: ${parts.join(', ')}${where}${interrupted ? '; stopped: run again to continue' : ''}\n`);
  return { done, failed: failed + invalid, waiting, skipped, interrupted };
}

/**
 * One line's call: its message, or for a line an earlier run left waiting, its recorded session state and a
 * resume message of its decisions. A fresh line with decisions whose reply is an interrupt is resumed at once.
 */
async function runLine(
  agent: AgentLike,
  task: Task,
  sessionId: SessionId,
  signal: AbortSignal | undefined,
): Promise<AgentMessage> {
  const { decisions, paused } = task;
  // As plain JSON: an agent module may use another copy of the library, whose messages are other classes.
  const resume = () => resumeWith(decisions!).toJSON() as MessageInput;
  if (paused !== undefined && decisions !== undefined) {
    if (paused.state !== undefined && agent.loadStateDict !== undefined)
      await agent.loadStateDict(paused.state, sessionId);
    return runAgent(agent, resume(), { sessionId, signal });
  }
  const reply = await runAgent(agent, task.message, { sessionId, signal });
  if (decisions === undefined || interruptsOf(reply).length === 0) return reply;
  return runAgent(agent, resume(), { sessionId, signal });
}
