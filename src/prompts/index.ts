export { TemplateError } from '../schema/errors';
export type { OutputParser } from './output-parser';
export type {
  InterpreterParserOptions,
  JSONParserOptions,
  MixedToolParserOptions,
  PluginParserOptions,
  StrParserOptions,
  ToolParserOptions,
  ToolResponse,
} from './parsers/index';
export {
  asToolResponse,
  InterpreterParser,
  JSONParser,
  MixedToolParser,
  PluginParser,
  StrParser,
  ToolParser,
  ToolStatusCode,
  validatePluginCall,
} from './parsers/index';
export type { PromptTemplateOptions } from './prompt-template';
export { PromptTemplate } from './prompt-template';
export type { TemplateStyle } from './template-text';
