// Light and dark mode: follows the system unless the user picks one (kept in localStorage).
export type ThemeChoice = "auto" | "light" | "dark";
const KEY = "flightlog.theme";
const listeners = new Set<() => void>();

export function themeChoice(): ThemeChoice {
  const v = localStorage.getItem(KEY);
  return v === "light" || v === "dark" ? v : "auto";
}

export function effectiveTheme(): "light" | "dark" {
  const c = themeChoice();
  if (c !== "auto") return c;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export function applyTheme(): void {
  document.documentElement.dataset.theme = effectiveTheme();
  listeners.forEach((fn) => fn());
}

export function setTheme(choice: ThemeChoice): void {
  if (choice === "auto") localStorage.removeItem(KEY);
  else localStorage.setItem(KEY, choice);
  applyTheme();
}

export function onTheme(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

matchMedia("(prefers-color-scheme: dark)").addEventListener("change", applyTheme);

/** A CSS custom property's value (charts draw with the theme's colors). */
export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

export const PALETTE_LIGHT = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d", "#65a30d", "#4f46e5", "#b45309"];
export const PALETTE_DARK = ["#60a5fa", "#f87171", "#4ade80", "#c084fc", "#fb923c", "#22d3ee", "#f472b6", "#a3e635", "#818cf8", "#fbbf24"];

export function palette(): string[] {
  return effectiveTheme() === "dark" ? PALETTE_DARK : PALETTE_LIGHT;
}

export function colorOf(i: number): string {
  const p = palette();
  return p[((i % p.length) + p.length) % p.length];
}

/** A stable color for a name (stages keep their color on every chart). */
export function colorFor(name: string): string {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
  return colorOf(Math.abs(h));
}

const STAGE_COLORS = ["#8b5cf6", "#10b981", "#f59e0b", "#ec4899", "#06b6d4", "#84cc16", "#ef4444", "#6366f1", "#14b8a6", "#f97316"];
const KNOWN: Record<string, number> = { data_loading: 0, train: 1, evaluation: 2, checkpoint: 3 };

/** Colors for a run's stages: distinct within the run, the usual phases always the same. */
export function stageColors(names: string[]): (name: string) => string {
  const map = new Map<string, string>();
  const taken = new Set<number>();
  for (const n of names) {
    const k = KNOWN[n];
    if (k !== undefined) {
      map.set(n, STAGE_COLORS[k]);
      taken.add(k);
    }
  }
  let next = 0;
  for (const n of names) {
    if (map.has(n)) continue;
    while (taken.has(next % STAGE_COLORS.length) && taken.size < STAGE_COLORS.length) next++;
    map.set(n, STAGE_COLORS[next % STAGE_COLORS.length]);
    taken.add(next % STAGE_COLORS.length);
    next++;
  }
  return (name: string) => map.get(name) ?? colorFor(name);
}
