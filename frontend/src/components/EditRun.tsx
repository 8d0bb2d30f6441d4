// Rename, retag and describe a run (any status): POST api/v1/runs/{run}/edit, a writer's right.
import { useState } from "preact/hooks";
import { send } from "../api";
import type { Run } from "../types";
import { ErrorBox } from "./ui";

const DESCRIPTION = "description";

function tagText(tags: Record<string, string>): string {
  return Object.entries(tags).filter(([k]) => k !== DESCRIPTION).map(([k, v]) => `${k}=${v}`).join("\n");
}

export function EditRun({ run, onSaved }: { run: Run; onSaved: (run: Run) => void }) {
  const [open, setOpen] = useState(false);
  if (!open) {
    return (
      <button type="button" class="btn btn-ghost" id="edit-run" title="Rename, retag or describe this run"
        onClick={() => setOpen(true)}>✎ Edit</button>
    );
  }
  return <EditForm run={run} onClose={() => setOpen(false)} onSaved={onSaved} />;
}

/** The form, mounted on each opening: its fields start from the run as it is then. */
function EditForm({ run, onClose, onSaved }: { run: Run; onClose: () => void; onSaved: (run: Run) => void }) {
  const [name, setName] = useState(run.name ?? "");
  const [description, setDescription] = useState(run.tags[DESCRIPTION] ?? "");
  const [tags, setTags] = useState(tagText(run.tags));
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);

  const save = async (e: Event) => {
    e.preventDefault();
    const wanted: Record<string, string> = {};
    for (const line of tags.split("\n").map((l) => l.trim()).filter(Boolean)) {
      const at = line.indexOf("=");
      if (at <= 0) {
        setError(new Error(`tag line "${line}": write key=value, one per line`));
        return;
      }
      wanted[line.slice(0, at).trim()] = line.slice(at + 1).trim();
    }
    const remove = Object.keys(run.tags).filter((k) => k !== DESCRIPTION && !(k in wanted));
    const body: Record<string, unknown> = { tags: wanted, remove_tags: remove, description };
    if (name.trim() && name.trim() !== (run.name ?? "")) body.name = name.trim();
    setBusy(true);
    try {
      const updated = await send<Run>("POST", `runs/${encodeURIComponent(run.id)}/edit`, body);
      onClose();
      onSaved(updated);
    } catch (err) {
      setError(err as Error);
      setBusy(false);
    }
  };
  return (
    <form class="run-edit card-body" id="run-edit" onSubmit={save}>
      <label>Name<input id="edit-name" value={name} maxLength={200} onInput={(e) => setName((e.target as HTMLInputElement).value)} /></label>
      <label>Description<textarea id="edit-description" value={description}
        onInput={(e) => setDescription((e.target as HTMLTextAreaElement).value)} /></label>
      <label>Tags (key=value, one per line)<textarea id="edit-tags" value={tags} spellcheck={false}
        onInput={(e) => setTags((e.target as HTMLTextAreaElement).value)} /></label>
      {error ? <ErrorBox error={error} what="the edit" /> : null}
      <div class="actions">
        <button type="submit" class="btn btn-primary" id="edit-save" disabled={busy}>Save</button>
        <button type="button" class="btn" onClick={onClose}>Cancel</button>
      </div>
    </form>
  );
}
