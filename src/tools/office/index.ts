// Office tools (issue 10): PPT
export { AsyncPPT, PPT, type PPTLayout, type PPTOptions, type PPTTheme } from './ppt';
