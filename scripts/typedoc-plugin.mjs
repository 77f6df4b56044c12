// @ts-check
/**
 * The TypeDoc plugin of `npm run docs`. It makes the reference show what a user imports:
 *
 * - each entry is named by its import path (`lagent-ts`, `lagent-ts/tools`, ...) instead of its file;
 * - members keyed by one of the package's own symbols (`[LANES]`, `[CALL_STEPS]`, `[EMITTER]`, ...) are
 *   left out: no entry exports those symbols, so no user can name such a member. Members keyed by a
 *   well-known symbol (`[Symbol.iterator]`, `[Symbol.asyncIterator]`, ...) stay.
 */
import { Converter, ReflectionKind } from 'typedoc';

const PACKAGE = 'lagent-ts';

const WELL_KNOWN = new Set(
  Object.getOwnPropertyNames(Symbol)
    .filter((key) => typeof Symbol[/** @type {keyof SymbolConstructor} */ (key)] === 'symbol')
    .map((key) => `[${key}]`),
);

const MEMBER_KINDS = ReflectionKind.Property | ReflectionKind.Method | ReflectionKind.Accessor;

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    const project = context.project;
    for (const entry of project.getChildrenByKind(ReflectionKind.Module)) {
      entry.name = entry.name === 'index' ? PACKAGE : `${PACKAGE}/${entry.name}`;
    }
    for (const reflection of project.getReflectionsByKind(MEMBER_KINDS)) {
      const name = reflection.name;
      if (name.startsWith('[') && name.endsWith(']') && !WELL_KNOWN.has(name))
        project.removeReflection(reflection);
    }
  });
}
