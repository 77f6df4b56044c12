import { packageFileText } from '../../utils/package-file';

/** The Python side of an interpreter session (`driver.py` beside this file: its header says how it works). */
export function driverSource(): string {
  return packageFileText('tools/python/driver.py');
}
