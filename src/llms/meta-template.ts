import type { LMMetaTemplate, LMRoleBegin } from './lm-template-parser';

const TOOL_NAMES = Object.freeze({ interpreter: '<|interpreter|>', plugin: '<|plugin|>' });

function chatMLBegin(role: string, toolNames: boolean): LMRoleBegin {
  const begin: LMRoleBegin = {
    withName: `<|im_start|>${role} name={name}\n`,
    withoutName: `<|im_start|>${role}\n`,
  };
  if (toolNames) begin.name = TOOL_NAMES;
  return Object.freeze(begin);
}

/**
 * InternLM2's chat format (ChatML with named turns): `<|im_start|>role[ name=...]\n...<|im_end|>\n`, where the
 * names `interpreter` and `plugin` render as InternLM2's special tokens. Use with `LMTemplateParser` or as the
 * `metaTemplate` of a raw-prompt model; stop on `'<|im_end|>'`.
 */
export const INTERNLM2_META: LMMetaTemplate = Object.freeze([
  Object.freeze({ role: 'system', begin: chatMLBegin('system', true), end: '<|im_end|>\n' }),
  Object.freeze({ role: 'user', begin: chatMLBegin('user', false), end: '<|im_end|>\n' }),
  Object.freeze({ role: 'assistant', begin: chatMLBegin('assistant', true), end: '<|im_end|>\n' }),
  Object.freeze({ role: 'environment', begin: chatMLBegin('environment', true), end: '<|im_end|>\n' }),
]);
