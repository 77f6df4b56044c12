import { ConfigurationError, ValidationError } from '../schema/errors';
import { isPlainObject } from '../utils/is';
import type { DeleteTarget, FieldType, FieldTypes, FieldValue, VectorMetadata, VectorRecord } from './types';

/**
 * The checks every vector store runs before it writes or reads anything, so that each refuses the same
 * input with the same `ValidationError`, and a refused batch leaves nothing behind.
 */

export const DEFAULT_NAMESPACE = 'default';

const NAMESPACE = /^[A-Za-z0-9_\-.:@]{1,128}$/;
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const FIELD_TYPES: readonly FieldType[] = ['string', 'number', 'boolean'];

/** A positive integer number of dimensions, at most 16,000 (pgvector's and sqlite-vec's limits are near it). */
export function checkDimensions(dimensions: unknown, owner: string): number {
  if (
    typeof dimensions !== 'number' ||
    !Number.isInteger(dimensions) ||
    dimensions < 1 ||
    dimensions > 16_000
  ) {
    throw new ConfigurationError({
      message: `${owner}: dimensions must be an integer from 1 to 16000, got ${String(dimensions)}`,
    });
  }
  return dimensions;
}

/** The declared filter fields, checked: names usable as column names, known types. */
export function checkFields(fields: unknown, owner: string): FieldTypes {
  if (fields === undefined) return Object.freeze({});
  if (!isPlainObject(fields)) {
    throw new ConfigurationError({
      message: `${owner}: fields must map field names to 'string', 'number' or 'boolean'`,
    });
  }
  const result: Record<string, FieldType> = {};
  for (const [name, type] of Object.entries(fields)) {
    if (!FIELD_NAME.test(name)) {
      throw new ConfigurationError({
        message: `${owner}: field name ${JSON.stringify(name)} must be letters, digits and _ (not starting with a digit, at most 63)`,
      });
    }
    if (!FIELD_TYPES.includes(type as FieldType)) {
      throw new ConfigurationError({
        message: `${owner}: field ${name} must be of type 'string', 'number' or 'boolean', got ${JSON.stringify(type)}`,
      });
    }
    result[name] = type as FieldType;
  }
  return Object.freeze(result);
}

/** The namespace an operation applies to. */
export function namespaceOf(options: { namespace?: string | undefined } | undefined): string {
  const namespace = options?.namespace ?? DEFAULT_NAMESPACE;
  if (typeof namespace !== 'string' || !NAMESPACE.test(namespace)) {
    throw new ValidationError({
      message: `namespace must be 1 to 128 letters, digits or _ - . : @, got ${JSON.stringify(namespace)}`,
      field: 'namespace',
    });
  }
  return namespace;
}

/**
 * The vector as a unit-length Float32Array (cosine similarity is then a dot product). Refuses a vector of
 * another length, a value that is not a finite number (NaN, Infinity, one too large for 32 bits) and a zero
 * vector, which has no direction.
 */
export function unitVector(vector: unknown, dimensions: number, field: string): Float32Array {
  const isTyped = vector instanceof Float32Array || vector instanceof Float64Array;
  if (!Array.isArray(vector) && !isTyped) {
    throw new ValidationError({ message: `${field} must be an array of numbers`, field });
  }
  const values = vector as ArrayLike<unknown>;
  if (values.length !== dimensions) {
    throw new ValidationError({
      message: `${field} has ${values.length} dimensions, but the store holds vectors of ${dimensions}`,
      field,
    });
  }
  const result = new Float32Array(dimensions);
  let norm = 0;
  for (let index = 0; index < dimensions; index++) {
    const value = values[index];
    if (typeof value !== 'number' || !Number.isFinite(value) || !Number.isFinite(Math.fround(value))) {
      throw new ValidationError({
        message: `${field}[${index}] must be a finite number, got ${String(value)}`,
        field: `${field}[${index}]`,
      });
    }
    result[index] = value;
    norm += value * value;
  }
  if (norm === 0) {
    throw new ValidationError({ message: `${field} is all zeros: it has no direction to compare`, field });
  }
  const scale = 1 / Math.sqrt(norm);
  for (let index = 0; index < dimensions; index++) result[index]! *= scale;
  return result;
}

/** A record as a store writes it: checked, its vector unit-length, its metadata a copy. */
export interface PreparedRecord {
  id: string;
  vector: Float32Array;
  metadata: VectorMetadata;
  /** The metadata as JSON text. */
  json: string;
}

/**
 * Checks a batch before any of it is written: ids, vectors, metadata (a JSON object whose declared fields
 * have their declared types). A later record with the id of an earlier one replaces it, as a later upsert
 * would.
 */
export function prepareRecords(records: unknown, dimensions: number, fields: FieldTypes): PreparedRecord[] {
  if (!Array.isArray(records)) {
    throw new ValidationError({ message: 'upsert takes an array of records', field: 'records' });
  }
  const byId = new Map<string, PreparedRecord>();
  for (const [index, record] of (records as unknown[]).entries()) {
    const where = `records[${index}]`;
    if (!isPlainObject(record))
      throw new ValidationError({ message: `${where} must be an object`, field: where });
    const { id, vector, metadata } = record as Partial<VectorRecord>;
    if (typeof id !== 'string' || id.length === 0 || id.length > 512) {
      throw new ValidationError({
        message: `${where}.id must be a string of 1 to 512 characters, got ${JSON.stringify(id)}`,
        field: `${where}.id`,
      });
    }
    const unit = unitVector(vector, dimensions, `${where}.vector`);
    const copy = checkMetadata(metadata, fields, `${where}.metadata`);
    byId.delete(id);
    byId.set(id, { id, vector: unit, metadata: copy.metadata, json: copy.json });
  }
  return [...byId.values()];
}

function checkMetadata(
  metadata: unknown,
  fields: FieldTypes,
  where: string,
): { metadata: VectorMetadata; json: string } {
  if (metadata === undefined) return { metadata: {}, json: '{}' };
  if (!isPlainObject(metadata))
    throw new ValidationError({ message: `${where} must be a plain object`, field: where });
  let json: string;
  try {
    json = JSON.stringify(metadata);
  } catch (error) {
    throw new ValidationError({
      message: `${where} must be JSON: ${(error as Error).message}`,
      field: where,
    });
  }
  const copy = JSON.parse(json) as VectorMetadata;
  for (const [name, type] of Object.entries(fields)) {
    const value = copy[name];
    if (value === undefined || value === null) continue;
    if (!hasType(value, type)) {
      throw new ValidationError({
        message: `${where}.${name} is declared ${type}, got ${JSON.stringify(value)}`,
        field: `${where}.${name}`,
      });
    }
  }
  return { metadata: copy, json };
}

function hasType(value: unknown, type: FieldType): value is FieldValue {
  return type === 'number' ? typeof value === 'number' && Number.isFinite(value) : typeof value === type;
}

/**
 * A filter checked against the declared fields: every name declared, every value of the field's type. An
 * empty filter, or none, matches everything.
 */
export function checkFilter(filter: unknown, fields: FieldTypes): [string, FieldValue][] {
  if (filter === undefined) return [];
  if (!isPlainObject(filter)) {
    throw new ValidationError({ message: 'filter must map declared fields to values', field: 'filter' });
  }
  const entries: [string, FieldValue][] = [];
  for (const [name, value] of Object.entries(filter)) {
    const type = fields[name];
    if (type === undefined) {
      const declared = Object.keys(fields);
      throw new ValidationError({
        message: `filter names the field ${JSON.stringify(name)}, which the store does not declare (${declared.length === 0 ? 'it declares none' : `declared: ${declared.join(', ')}`}); declare it in the store's fields`,
        field: `filter.${name}`,
      });
    }
    if (!hasType(value, type)) {
      throw new ValidationError({
        message: `filter.${name} must be a ${type}, got ${JSON.stringify(value)}`,
        field: `filter.${name}`,
      });
    }
    entries.push([name, value]);
  }
  return entries;
}

/** Whether the metadata matches every entry of a checked filter. */
export function matches(metadata: VectorMetadata, filter: readonly [string, FieldValue][]): boolean {
  for (const [name, value] of filter) if (metadata[name] !== value) return false;
  return true;
}

/** `topK` checked: a positive integer (capped by the store at what it holds). */
export function checkTopK(topK: unknown): number {
  if (typeof topK !== 'number' || !Number.isInteger(topK) || topK < 1 || topK > 4096) {
    throw new ValidationError({
      message: `topK must be an integer from 1 to 4096, got ${String(topK)}`,
      field: 'topK',
    });
  }
  return topK;
}

/** What a delete removes: ids (checked) or a checked filter. */
export function checkDeleteTarget(
  target: DeleteTarget,
  fields: FieldTypes,
): { ids: string[] } | { filter: [string, FieldValue][] } {
  if (Array.isArray(target)) {
    for (const [index, id] of target.entries()) {
      if (typeof id !== 'string' || id.length === 0) {
        throw new ValidationError({
          message: `ids[${index}] must be a non-empty string`,
          field: `ids[${index}]`,
        });
      }
    }
    return { ids: [...new Set(target as string[])] };
  }
  if (isPlainObject(target) && isPlainObject((target as { filter?: unknown }).filter)) {
    return { filter: checkFilter((target as { filter: unknown }).filter, fields) };
  }
  throw new ValidationError({
    message: 'delete takes an array of ids or { filter }',
    field: 'target',
  });
}

/** A store's error for a call after `close()`. */
export function closedError(owner: string): ConfigurationError {
  return new ConfigurationError({ message: `${owner} is closed` });
}
