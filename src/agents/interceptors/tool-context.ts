export { ToolCallContext } from '../../actions/tool-call-context';
