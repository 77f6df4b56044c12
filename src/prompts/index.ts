export { TemplateError } from '../schema/errors';
export type { OutputParser } from './output-parser';
export type {
  CustomFormatParserOptions,
  DeepPartial,
  InterpreterParserOptions,
  JSONParserOptions,
  MixedToolParserOptions,
  PartialJSONParserOptions,
  PluginParserOptions,
  StrParserOptions,
  ToolParserOptions,
  ToolResponse,
} from './parsers/index';
export {
  asToolResponse,
  CustomFormatParser,
  InterpreterParser,
  JSONParser,
  MixedToolParser,
  PartialJSONParser,
  PluginParser,
  StrParser,
  ToolParser,
  ToolStatusCode,
  validatePluginCall,
} from './parsers/index';
export type { PromptTemplateOptions } from './prompt-template';
export { PromptTemplate } from './prompt-template';
export type { TemplateStyle } from './template-text';
