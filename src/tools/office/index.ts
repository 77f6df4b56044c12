// Office tools (issue 10): PPT
export {};
