// Python interpreters: one sandboxed process per session.
export type { IPythonInteractiveOptions, PythonInterpreterOptions } from './interpreters';
export {
  AsyncIPythonInteractive,
  AsyncIPythonInterpreter,
  AsyncPythonInterpreter,
  extractCode,
  IPythonInteractive,
  IPythonInterpreter,
  PythonInterpreter,
} from './interpreters';
export type { IPythonInteractiveManagerOptions } from './manager';
export { AsyncIPythonInteractiveManager, IPythonInteractiveManager } from './manager';
export type { PythonToolOptions, ResolvedPythonOptions, SandboxMode } from './python-sessions';
