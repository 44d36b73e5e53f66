"use strict";
// intercode report: draws the episode table and the transcripts from the embedded
// data. Agent text is only ever put into the page with textContent.
(function () {
  const $ = (id) => document.getElementById(id);
  let DATA = null;
  let ROWS = [];

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    if (attrs) for (const [k, v] of Object.entries(attrs)) {
      if (k === "text") node.textContent = v;
      else if (k === "cls") node.className = v;
      else node.setAttribute(k, v);
    }
    for (const c of children) if (c != null) node.append(c);
    return node;
  }

  async function load() {
    const text = $("report-data").textContent.trim();
    const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  // up to 4 significant digits, trailing zeros dropped (0.6900000000000001 is 0.69)
  function fmtReward(r) { return r == null ? "–" : Number(Number(r).toPrecision(4)).toString(); }

  function buildTable() {
    const cols = DATA.columns;
    const idx = Object.fromEntries(cols.map((c, i) => [c, i]));
    const body = $("episode-table").tBodies[0];
    const frag = document.createDocumentFragment();
    const categories = new Set();
    ROWS = DATA.episodes.map((e) => {
      const run = DATA.runs[e[idx.run]];
      const key = e[idx.run] + "/" + e[idx.task];
      const status = e[idx.status];
      const tr = el("tr", { "data-key": key });
      tr.append(
        el("td", { text: run.label }),
        el("td", { text: String(e[idx.task]) }),
        el("td", { text: e[idx.category] || "" }),
        el("td", { cls: "s-" + status, text: status }),
        el("td", { cls: e[idx.success] ? "solved" : "", text: fmtReward(e[idx.reward]) }),
        el("td", { text: String(e[idx.turns]) }),
        el("td", { cls: "q", text: e[idx.query] || "", title: e[idx.query] || "" }),
        el("td", { cls: "e", text: e[idx.error] || "" }));
      frag.append(tr);
      if (e[idx.category]) categories.add(e[idx.category]);
      const t = DATA.transcripts[key];
      const actions = t ? t.turns.map((x) => x.a + "\n" + (x.o || "")).join("\n") : "";
      return { tr, run: String(e[idx.run]), status, success: e[idx.success] ? "1" : "0",
               category: e[idx.category] || "",
               hay: ((e[idx.query] || "") + "\n" + (e[idx.error] || "") + "\n" + actions).toLowerCase() };
    });
    body.append(frag);
    body.addEventListener("click", (ev) => {
      const tr = ev.target.closest("tr");
      if (tr) location.hash = "#t/" + tr.getAttribute("data-key");
    });
    DATA.runs.forEach((r, i) => $("f-run").append(el("option", { value: String(i), text: r.label })));
    [...categories].sort().forEach((c) => $("f-category").append(el("option", { value: c, text: c })));
    let timer = null;
    const later = () => { clearTimeout(timer); timer = setTimeout(applyFilters, 120); };
    for (const id of ["f-run", "f-status", "f-success", "f-category"]) $(id).addEventListener("change", applyFilters);
    $("f-text").addEventListener("input", later);
    $("loading").remove();
    applyFilters();
  }

  function applyFilters() {
    const run = $("f-run").value, status = $("f-status").value, success = $("f-success").value;
    const category = $("f-category").value, text = $("f-text").value.trim().toLowerCase();
    let shown = 0;
    for (const r of ROWS) {
      const ok = (!run || r.run === run) && (!status || r.status === status)
        && (!success || (r.status === "ok" && r.success === success) || (success === "0" && r.status !== "ok" && r.status !== "skipped"))
        && (!category || r.category === category) && (!text || r.hay.includes(text));
      r.tr.hidden = !ok;
      if (ok) shown++;
    }
    $("f-count").textContent = shown + " of " + ROWS.length + " episodes";
  }

  function message(m, id) {
    const [role, content] = m || ["?", "[message " + id + " not recorded]"];
    return el("div", { cls: "msg " + role }, el("div", { cls: "role", text: role }), el("pre", { text: content }));
  }

  // A call's new messages: those beyond what the previous call sent (a multiset
  // difference, so a repeated message still shows as new where it is new).
  function prompts(turn, state) {
    const box = el("div");
    (turn.p || []).forEach((ids, n) => {
      const left = new Map();
      for (const id of state.previous) left.set(id, (left.get(id) || 0) + 1);
      const fresh = ids.filter((id) => {
        const k = left.get(id) || 0;
        if (k > 0) { left.set(id, k - 1); return false; }
        return true;
      });
      const old = ids.length - fresh.length;
      const label = (turn.p.length > 1 ? "call " + (n + 1) + ": " : "") + "the model saw " + ids.length +
        " message" + (ids.length === 1 ? "" : "s") + (old ? " (" + old + " shown earlier)" : "");
      const all = el("details", null, el("summary", { text: "all " + ids.length + " messages of this call" }));
      ids.forEach((id) => all.append(message(DATA.messages[id], id)));
      const part = el("div", null, el("div", { cls: "role", text: label }));
      fresh.forEach((id) => part.append(message(DATA.messages[id], id)));
      if (old) part.append(all);
      state.previous = ids;
      box.append(part);
    });
    return box;
  }

  function showTranscript(runIndex, task) {
    const key = runIndex + "/" + task;
    const view = $("transcript");
    view.replaceChildren();
    const run = DATA.runs[runIndex];
    const row = DATA.episodes.find((e) => String(e[0]) + "/" + String(e[1]) === key);
    view.append(el("a", { cls: "back", href: "#episodes", text: "← all episodes" }));
    if (!run || !row) { view.append(el("p", { text: "No episode " + key + " in this report." })); return; }
    const cols = Object.fromEntries(DATA.columns.map((c, i) => [c, i]));
    const t = DATA.transcripts[key] || { turns: [] };
    view.append(el("h2", { text: run.label + " · task " + task }));
    const kv = el("div", { cls: "kv" });
    const add = (k, v) => { if (v != null && v !== "") kv.append(el("b", { text: k }), el("span", { text: String(v) })); };
    add("status", row[cols.status]); add("reward", fmtReward(row[cols.reward]));
    add("solved", row[cols.success] == null ? null : (row[cols.success] ? "yes" : "no"));
    add("category", row[cols.category]); add("turns", row[cols.turns]);
    add("best turn", t.best_turn == null ? null : t.best_turn + 1);
    add("error", t.error); add("agent fault", t.agent_fault); add("stopped", t.stop_reason);
    add("known issue", t.known_issue); add("started", t.started_at);
    view.append(kv, el("h3", { text: "Query" }), el("pre", { text: row[cols.query] || "" }));
    if (t.plan) view.append(el("h3", { text: "Plan" }), el("pre", { text: t.plan }));
    if (!run.prompts_recorded && t.turns.length) {
      view.append(el("p", { cls: "muted", text: "This run did not record the prompts the model saw (recorded since records schema 2)." }));
    }
    const seen = { previous: [] };
    t.turns.forEach((turn, i) => {
      const box = el("div", { cls: "turn" });
      const bits = ["turn " + (i + 1)];
      if (turn.r != null) bits.push("reward " + fmtReward(turn.r));
      if (turn.x != null) bits.push("exit " + turn.x);
      if (turn.t) bits.push("timed out");
      if (turn.v === 0) bits.push(run.invalid);
      if (turn.s) bits.push("submit");
      box.append(el("h3", { text: bits.join(" · ") }));
      if (turn.p) box.append(prompts(turn, seen));
      if (turn.th) box.append(el("div", { cls: "role", text: "thought" }), el("pre", { text: turn.th }));
      if (turn.y != null) box.append(el("div", { cls: "role", text: "raw reply" }), el("pre", { text: turn.y }));
      box.append(el("div", { cls: "role", text: "action" }), el("pre", { cls: "action", text: turn.a }));
      box.append(el("div", { cls: "role", text: "output" }), el("pre", { cls: "output", text: turn.o }));
      if (turn.c) box.append(el("div", { cls: "muted", text: turn.c.calls + " call(s), " + turn.c.prompt_tokens + " + " + turn.c.completion_tokens + " tokens, " + turn.c.latency_s + " s" }));
      view.append(box);
    });
    if (t.reward_info) view.append(el("h3", { text: "Reward and its parts" }), el("pre", { text: JSON.stringify(t.reward_info, (k, v) => (typeof v === "number" && !Number.isInteger(v) ? Number(v.toPrecision(4)) : v), 1) }));
  }

  function route() {
    const m = /^#t\/(\d+)\/(-?\d+)$/.exec(location.hash);
    const view = $("transcript"), overview = $("overview");
    if (m && DATA) {
      showTranscript(Number(m[1]), Number(m[2]));
      overview.hidden = true; view.hidden = false; window.scrollTo(0, 0);
    } else {
      view.hidden = true; overview.hidden = false;
    }
  }

  window.addEventListener("hashchange", route);
  load().then((data) => {
    DATA = data;
    buildTable();
    route();
    document.body.setAttribute("data-ready", "1");
  }).catch((err) => {
    $("loading").textContent = "The report's data could not be read: " + err;
    document.body.setAttribute("data-ready", "error");
    throw err;
  });
})();
