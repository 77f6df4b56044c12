// `node --import ./test/helpers/hide-packages.mjs ...`: the packages named in LAGENT_HIDE_PACKAGES
// (comma-separated) cannot be found, as on a machine where they were never installed. For the tests of what
// a command or an example says when an optional peer is missing.
import { register } from 'node:module';

const hidden = (process.env.LAGENT_HIDE_PACKAGES ?? '').split(',').filter(Boolean);
const hooks = `const hidden = ${JSON.stringify(hidden)};
export async function resolve(specifier, context, next) {
  if (hidden.some((name) => specifier === name || specifier.startsWith(name + '/'))) {
    throw Object.assign(new Error("Cannot find package '" + specifier + "'"), { code: 'ERR_MODULE_NOT_FOUND' });
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
