// How the view writes shares. (Names come from the server as they are.)
export function percent(p: number): string { return p.toFixed(p >= 10 ? 1 : 2) + '%'; }
