import { packageFileText } from '../../../utils/package-file';

/** The page-extraction worker's CommonJS source (`worker.cjs` beside this file: its header says how it works). */
export function extractWorkerSource(): string {
  return packageFileText('tools/web/extract/worker.cjs');
}
