// lagent-ts/stores: session stores on SQLite, Redis and PostgreSQL (each needs its driver installed:
// better-sqlite3, ioredis, pg). MemoryStore and the SessionStore interface are in the root entry.

export { openStore } from './open-store';
export { PostgresStore, type PostgresStoreOptions } from './postgres-store';
export { RedisStore, type RedisStoreOptions } from './redis-store';
export { SQLiteStore, type SQLiteStoreOptions } from './sqlite-store';
export type {
  AcquiredSession,
  AcquireOptions,
  BusySession,
  CommitOptions,
  CreatedRun,
  CreateRunOptions,
  FinishJournalOptions,
  JournalEntry,
  JournalFence,
  ListOptions,
  MaybePromise,
  RunEvent,
  RunEventInput,
  RunEventPage,
  RunListOptions,
  RunLogStore,
  RunPage,
  RunRecord,
  RunStatus,
  RunWrite,
  RunWritten,
  SessionInfo,
  SessionPage,
  SessionStore,
  SessionTurn,
  StoredJournal,
  StoredSession,
  StoredState,
  StoreOptions,
  SyncSessionStore,
  UnfinishedCall,
  UnfinishedCallPage,
} from './types';
