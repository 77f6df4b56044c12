// Office tools: PPT
export { AsyncPPT, PPT, type PPTLayout, type PPTOptions, type PPTTheme } from './ppt';
