import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { missingPeer } from '../../../schema/errors';
import { extractWorkerSource } from './worker-source';

/** The readable text of a page. */
export interface PageText {
  title: string;
  text: string;
}

/** What the worker bounds before it runs Readability (see `worker-source.ts`). */
export interface ExtractLimits {
  /** Tags nested deeper than this (by a scan of the source) are dropped before parsing; their text stays. */
  maxParseDepth: number;
  /** Elements deeper than this in the parsed tree are replaced by their text. */
  maxDepth: number;
  /** Readability runs only on documents with at most this many elements. */
  maxReadabilityElements: number;
}

/** Absolute paths of the optional peers the worker loads. */
export interface PeerModules {
  linkedom: string;
  readability: string;
}

/** The answer of one extraction: the page, or why the worker gave none. */
export type ExtractOutcome =
  | { ok: true; page: PageText }
  | {
      ok: false;
      /** `timeout`: stopped at the time limit; `crashed`: the thread died (e.g. out of memory); `failed`: it threw. */
      reason: 'timeout' | 'crashed' | 'failed';
      message: string;
    };

/** One extraction of {@link ExtractorPool.extract}. */
export interface ExtractRequest {
  html: string;
  limits: ExtractLimits;
  /** Milliseconds the extraction may run once a thread has it; then the thread is stopped. */
  timeoutMs: number;
  /** Aborting it stops the extraction (its thread is stopped) and rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** Options of {@link ExtractorPool}. */
export interface ExtractorPoolOptions {
  /** Threads running at once; further extractions wait for one. @default 2 */
  maxWorkers?: number | undefined;
  /** Milliseconds an idle thread is kept before it ends. @default 10000 */
  idleMs?: number | undefined;
  /** Heap limit of each thread, in MB: a page that needs more ends its thread, not the process. @default 512 */
  maxHeapMb?: number | undefined;
  /** Milliseconds a new thread may take to load the libraries. @default 60000 */
  startupMs?: number | undefined;
  /** Where the peers are; by default resolved from lagent-ts's own location. */
  modules?: PeerModules | undefined;
}

const PEERS = ['@mozilla/readability', 'linkedom'] as const;
const FEATURE = 'WebBrowser.select and WebBrowser.open_url';

/**
 * This module's file, for resolving the peers as lagent-ts itself would: `import.meta.url` in ESM (sources and
 * the ESM build), the module-scoped `__filename` in the CJS build, where the bundler leaves `import.meta` empty.
 */
function currentFile(): string {
  const url: unknown = import.meta.url;
  if (typeof url === 'string' && url.startsWith('file:')) return fileURLToPath(url);
  return __filename;
}

/**
 * The absolute paths of `linkedom` and `@mozilla/readability` as seen from `from` (this package by default).
 *
 * @throws ConfigurationError saying what to install when one cannot be found.
 */
export function resolvePeers(from: string = currentFile()): PeerModules {
  try {
    const require = createRequire(from);
    return { linkedom: require.resolve('linkedom'), readability: require.resolve('@mozilla/readability') };
  } catch (error) {
    throw missingPeer(PEERS, FEATURE, error);
  }
}

interface Job extends ExtractRequest {
  resolve(outcome: ExtractOutcome): void;
  reject(error: unknown): void;
  onAbort?: (() => void) | undefined;
}

type Reply =
  | { type: 'ready' }
  | { type: 'load-error'; message: string }
  | { id: number; page: PageText }
  | { id: number; error: string };

/** One worker thread and the job it runs, if any. */
class Thread {
  readonly worker: Worker;
  ready = false;
  dead = false;
  job: Job | undefined;
  jobId = 0;
  timer: NodeJS.Timeout | undefined;
  idleTimer: NodeJS.Timeout | undefined;

  constructor(worker: Worker) {
    this.worker = worker;
  }
}

/**
 * Worker threads that extract pages' text, so a hostile page never blocks the calling thread: each extraction
 * has a time limit, after which its thread is stopped (and a new one started for the next page); a thread that
 * runs out of memory ends alone. Idle threads do not keep the process alive and end after `idleMs`.
 */
export class ExtractorPool {
  readonly #threads = new Set<Thread>();
  readonly #idle: Thread[] = [];
  readonly #queue: Job[] = [];
  readonly #maxWorkers: number;
  readonly #idleMs: number;
  readonly #maxHeapMb: number;
  readonly #startupMs: number;
  #modules: PeerModules | undefined;

  constructor(options: ExtractorPoolOptions = {}) {
    this.#maxWorkers = options.maxWorkers ?? 2;
    this.#idleMs = options.idleMs ?? 10_000;
    this.#maxHeapMb = options.maxHeapMb ?? 512;
    this.#startupMs = options.startupMs ?? 60_000;
    this.#modules = options.modules;
  }

  /** Threads alive now (busy, idle or starting). */
  get size(): number {
    return this.#threads.size;
  }

  /**
   * Extracts one page in a thread. Resolves to the page, or to why there is none (time limit, crash); rejects
   * only when the peers are missing (`ConfigurationError`) or `signal` aborts (its reason).
   */
  extract(request: ExtractRequest): Promise<ExtractOutcome> {
    const { signal } = request;
    if (signal?.aborted) return Promise.reject(signal.reason);
    let modules: PeerModules;
    try {
      modules = this.#modules ??= resolvePeers();
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<ExtractOutcome>((resolve, reject) => {
      const job: Job = { ...request, resolve, reject };
      if (signal) {
        job.onAbort = () => this.#abort(job);
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.#queue.push(job);
      this.#pump(modules);
    });
  }

  /** Ends every thread; extractions in progress resolve as crashed. */
  async close(): Promise<void> {
    const threads = [...this.#threads];
    for (const thread of threads)
      this.#end(thread, { ok: false, reason: 'crashed', message: 'the pool was closed' });
    await Promise.all(threads.map((thread) => thread.worker.terminate()));
  }

  #pump(modules: PeerModules): void {
    while (this.#queue.length > 0) {
      let thread = this.#idle.pop();
      if (!thread) {
        if (this.#threads.size >= this.#maxWorkers) return;
        thread = this.#start(modules);
      }
      const job = this.#queue.shift()!;
      this.#assign(thread, job);
    }
  }

  #start(modules: PeerModules): Thread {
    const worker = new Worker(extractWorkerSource(), {
      eval: true,
      workerData: modules,
      resourceLimits: { maxOldGenerationSizeMb: this.#maxHeapMb },
    });
    const thread = new Thread(worker);
    this.#threads.add(thread);
    thread.timer = setTimeout(() => {
      this.#end(thread, {
        ok: false,
        reason: 'crashed',
        message: `the extraction thread did not start within ${this.#startupMs} ms`,
      });
    }, this.#startupMs);
    worker.on('message', (reply: Reply) => this.#onReply(thread, reply, modules));
    worker.on('error', (error: Error) => {
      this.#end(thread, { ok: false, reason: 'crashed', message: error.message });
    });
    worker.on('exit', (code) => {
      this.#end(thread, {
        ok: false,
        reason: 'crashed',
        message: `the extraction thread exited (code ${code})`,
      });
    });
    return thread;
  }

  #onReply(thread: Thread, reply: Reply, modules: PeerModules): void {
    if (thread.dead) return;
    if ('type' in reply) {
      if (reply.type === 'ready') {
        clearTimeout(thread.timer);
        thread.ready = true;
        if (thread.job) this.#post(thread);
        return;
      }
      // The peers resolved but do not load: every waiting extraction fails the same way.
      const error = missingPeer(PEERS, FEATURE, new Error(reply.message));
      const jobs = [...(thread.job ? [thread.job] : []), ...this.#queue.splice(0)];
      thread.job = undefined;
      this.#end(thread, undefined);
      void thread.worker.terminate();
      for (const job of jobs) this.#settle(job, () => job.reject(error));
      return;
    }
    if (reply.id !== thread.jobId || !thread.job) return;
    const job = thread.job;
    clearTimeout(thread.timer);
    thread.job = undefined;
    this.#settle(job, () =>
      job.resolve(
        'page' in reply
          ? { ok: true, page: reply.page }
          : { ok: false, reason: 'failed', message: reply.error },
      ),
    );
    this.#release(thread, modules);
  }

  #assign(thread: Thread, job: Job): void {
    clearTimeout(thread.idleTimer);
    thread.job = job;
    thread.worker.ref();
    if (thread.ready) this.#post(thread);
  }

  #post(thread: Thread): void {
    const job = thread.job!;
    thread.jobId++;
    thread.worker.postMessage({ id: thread.jobId, html: job.html, limits: job.limits });
    thread.timer = setTimeout(() => {
      this.#end(thread, {
        ok: false,
        reason: 'timeout',
        message: `the extraction did not finish within ${job.timeoutMs} ms`,
      });
      void thread.worker.terminate();
    }, job.timeoutMs);
  }

  #release(thread: Thread, modules: PeerModules): void {
    if (this.#queue.length > 0) {
      this.#assign(thread, this.#queue.shift()!);
      return;
    }
    this.#idle.push(thread);
    thread.worker.unref();
    thread.idleTimer = setTimeout(() => {
      this.#end(thread, undefined);
      void thread.worker.terminate();
    }, this.#idleMs);
    thread.idleTimer.unref();
    this.#pump(modules);
  }

  /** Takes `thread` out of the pool for good; its job, if any, resolves to `outcome`. */
  #end(thread: Thread, outcome: ExtractOutcome | undefined): void {
    if (thread.dead) return;
    thread.dead = true;
    clearTimeout(thread.timer);
    clearTimeout(thread.idleTimer);
    this.#threads.delete(thread);
    const idle = this.#idle.indexOf(thread);
    if (idle !== -1) this.#idle.splice(idle, 1);
    const job = thread.job;
    thread.job = undefined;
    if (job && outcome) this.#settle(job, () => job.resolve(outcome));
    // Extractions waiting for a thread get a new one.
    if (this.#queue.length > 0 && this.#modules) this.#pump(this.#modules);
  }

  #abort(job: Job): void {
    const queued = this.#queue.indexOf(job);
    if (queued !== -1) this.#queue.splice(queued, 1);
    for (const thread of this.#threads) {
      if (thread.job === job) {
        thread.job = undefined;
        this.#end(thread, undefined);
        void thread.worker.terminate();
      }
    }
    this.#settle(job, () => job.reject(job.signal?.reason));
  }

  #settle(job: Job, settle: () => void): void {
    if (job.onAbort) job.signal?.removeEventListener('abort', job.onAbort);
    job.onAbort = undefined;
    settle();
  }
}
