// Which traceback frames a failure card lists, in which order: the user's own innermost frame
// first (the line they can change), then the others innermost first. A frame is the user's when
// its file is not under site-packages / dist-packages, not in the standard library
// (lib/pythonX.Y) and not a frozen module — the rule `flightlog runs show` uses (failure.py).
import type { Frame } from "./types";

const NOT_USERS = /[/\\](?:site|dist)-packages[/\\]|[/\\]lib[/\\]python\d+(?:\.\d+)?t?[/\\]|^<frozen /;

export function isUserFrame(file: string | null | undefined): boolean {
  return !!file && !NOT_USERS.test(file);
}

export function framesForDisplay(frames: Frame[] | undefined, limit = 5): (Frame & { user: boolean })[] {
  const ordered = [...(frames ?? [])].reverse().map((f) => ({ ...f, user: isUserFrame(f.file) }));
  const mine = ordered.findIndex((f) => f.user);
  if (mine > 0) ordered.unshift(...ordered.splice(mine, 1));
  return ordered.slice(0, limit);
}
