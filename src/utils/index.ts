export { deepClone } from './clone';
export { isIterator, isPlainObject, isThenable } from './is';
