#!/usr/bin/env node
// The lagent command (package bin): chat, serve, worker, batch.
export {};
