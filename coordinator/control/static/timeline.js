// The rebalance timeline page: one lane per member, what it owned over time as bars, the
// group's events as markers (coordinator/control/page.py serves it; README, "Rebalance
// timeline"). No dependency, no network but the page's own server: the events come embedded
// (<script id="timeline-events">, a page written offline) or from GET /timeline?group=G, polled
// with since= a little before the newest timestamp held (data-poll on <body>; see merge()).
//
// The DOM says what it drew, for people and for tests alike:
//   g.lane[data-member]                      one per member, in order of first appearance
//   rect.bar[data-member][data-part]         a partition (task, acquired share) owned from
//     [data-start-index][data-end-index]     the assigned event to the revoked (or member-left,
//                                            group-deleted) one; data-end-index "" while held
//   rect.overlap[data-part][data-members]    two members owning one partition at once (red)
//   g.marker[data-index][data-kind]          every other event, on its member's lane or on the
//     [data-member]                          group lane (data-member ""); <title> is the hover
// data-index is the event's index in the JSON timeline. <body> says data-events (how many it
// drew), data-render-ms (the last drawing's time), data-ready-ms (its end, since navigation
// began), data-rendered (how many drawings) and, live,
// data-polls and data-first-events (what the first fetch gave).
"use strict";

(function () {
  // Every kind the page draws: lane "member" (the event's member) or "group" (the top lane).
  // coordinator-moved and client-event are hooks: the page draws them when a server sends them
  // (a coordinator moving to another node; an event a client reported through telemetry), and
  // any other kind is drawn as a plain marker on its member's lane if it has a member.
  const KINDS = {
    "member-joined": { lane: "member", shape: "join", color: "#1b9e77", text: "joined" },
    "member-left": { lane: "member", shape: "leave", color: "#555555", text: "left" },
    "member-fenced": { lane: "member", shape: "cross", color: "#d62728", text: "fenced" },
    "subscription-changed": { lane: "member", shape: "diamond", color: "#7570b3", text: "subscription" },
    "revocation-requested": { lane: "member", shape: "down", color: "#e6ab02", text: "revoke asked" },
    "member-epoch": { lane: "member", shape: "tick", color: "#999999", text: "member epoch" },
    "epoch-bumped": { lane: "group", shape: "line", color: "#377eb8", text: "epoch bump" },
    "target-computed": { lane: "group", shape: "square", color: "#984ea3", text: "target" },
    "group-stable": { lane: "group", shape: "circle", color: "#1b9e77", text: "stable" },
    "rebalance-started": { lane: "group", shape: "down", color: "#e6ab02", text: "rebalance" },
    "group-deleted": { lane: "group", shape: "cross", color: "#555555", text: "deleted" },
    "coordinator-moved": { lane: "group", shape: "diamond", color: "#ff7f00", text: "coordinator moved" },
    "client-event": { lane: "member", shape: "star", color: "#a6761d", text: "client" },
    "held": { lane: "member", shape: "diamond", color: "#e7298a", text: "held" },
    "released": { lane: "member", shape: "diamond", color: "#66a61e", text: "released" },
    "round": { lane: "group", shape: "square", color: "#e7298a", text: "round" },
  };
  const OTHER = { lane: "member", shape: "circle", color: "#666666", text: "" };
  const CHANGES = new Set(["assigned", "revoked"]);
  const SINCE_SLACK_MS = 2000;
  const LABEL_W = 230, ROW_H = 9, LANE_PAD = 12, GROUP_LANE_H = 34, AXIS_H = 26, RIGHT_PAD = 30;

  const state = { events: [], zoom: 1, timer: null, failures: 0, reload: false, polls: 0 };

  function esc(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }

  // The parts of an assigned / revoked / revocation-requested event: [key, label, checked]
  // (checked: counted in overlaps; standby and warmup tasks are not, as the assertion does).
  function partsOf(event) {
    const out = [];
    if (event.tasks) {
      for (const [kind, bySub] of Object.entries(event.tasks)) {
        for (const [sub, ps] of Object.entries(bySub)) {
          for (const p of ps) out.push([`${kind}:${sub}-${p}`, kind === "active" ? `${sub}-${p}` : `${kind} ${sub}-${p}`, kind === "active"]);
        }
      }
      return out;
    }
    for (const [topic, ps] of Object.entries(event.partitions || {})) {
      for (const p of ps) out.push([`${topic}-${p}`, `${topic}-${p}`, true]);
    }
    return out;
  }

  function describe(event) {
    const skip = new Set(["timestamp", "kind", "group", "group_type"]);
    const fields = Object.entries(event).filter(([k]) => !skip.has(k))
      .map(([k, v]) => `${k}: ${typeof v === "object" && v !== null ? JSON.stringify(v) : v}`);
    return `${event.kind} at ${new Date(event.timestamp).toISOString()}\n${fields.join("\n")}`;
  }

  // The picture's model from the events alone (what the page shows, before any pixel).
  function build(events) {
    const order = events.map((e, i) => i).sort((a, b) => events[a].timestamp - events[b].timestamp || a - b);
    const lanes = [], laneOf = new Map();
    const bars = [], open = new Map(), overlaps = [], openOverlaps = new Map(), markers = [];
    const lane = (member) => {
      if (!laneOf.has(member)) {
        const l = { member, parts: new Map(), info: "", left: false };
        laneOf.set(member, l);
        lanes.push(l);
      }
      return laneOf.get(member);
    };
    const close = (bar, ts, index) => {
      bar.end = ts;
      bar.endIndex = index;
      open.get(bar.part).delete(bar.member);
      for (const o of openOverlaps.get(bar.part) || []) {
        if (o.members.includes(bar.member) && o.end === null) {
          o.end = ts;
          o.endIndex = index;
        }
      }
      openOverlaps.set(bar.part, (openOverlaps.get(bar.part) || []).filter((o) => o.end === null));
    };
    let groupType = null;
    let lastTarget = null; // the assignments after a target are the partitions it moved
    for (const i of order) {
      const e = events[i];
      if (e.group_type) groupType = e.group_type;
      if (e.member !== undefined && e.member !== null) lane(e.member);
      if (CHANGES.has(e.kind)) {
        const l = lane(e.member);
        if (e.kind === "assigned" && lastTarget !== null) {
          lastTarget.followed.push(`${e.member}: ${partsOf(e).map((p) => p[1]).join(" ")}`);
        }
        for (const [part, label, checked] of partsOf(e)) {
          if (!l.parts.has(part)) l.parts.set(part, label);
          const holders = open.get(part) || new Map();
          open.set(part, holders);
          if (e.kind === "assigned") {
            if (holders.has(e.member)) continue;
            const bar = { member: e.member, part, label, start: e.timestamp, startIndex: i, end: null, endIndex: null, epoch: e.epoch };
            if (checked && e.group_type !== "share") {
              for (const other of holders.keys()) {
                const o = { part, label, members: [other, e.member], start: e.timestamp, startIndex: i, end: null, endIndex: null };
                overlaps.push(o);
                openOverlaps.set(part, [...(openOverlaps.get(part) || []), o]);
              }
            }
            holders.set(e.member, bar);
            bars.push(bar);
          } else if (holders.has(e.member)) {
            close(holders.get(e.member), e.timestamp, i);
          }
        }
        continue;
      }
      if (e.kind === "member-left" || e.kind === "group-deleted") {
        for (const holders of open.values()) {
          for (const [member, bar] of [...holders]) {
            if (e.kind === "group-deleted" || member === e.member) close(bar, e.timestamp, i);
          }
        }
      }
      if (e.kind === "member-joined") {
        const who = [e.client_id, e.instance_id && `instance ${e.instance_id}`, e.classic && "classic"].filter(Boolean);
        lane(e.member).info = who.join(", ");
      }
      const spec = KINDS[e.kind] || OTHER;
      const onMember = spec.lane === "member" && e.member !== undefined && e.member !== null;
      const marker = { index: i, event: e, spec, member: onMember ? e.member : null, followed: [] };
      if (e.kind === "target-computed") lastTarget = marker;
      markers.push(marker);
    }
    let t0 = Infinity, t1 = -Infinity;
    for (const e of events) {
      t0 = Math.min(t0, e.timestamp);
      t1 = Math.max(t1, e.timestamp);
    }
    return { lanes, bars, overlaps, markers, groupType, t0, t1 };
  }

  function shape(spec, color) {
    const c = `fill="${color}" stroke="${color}"`;
    switch (spec.shape) {
      case "join": return `<path d="M-5,-6 L4,0 L-5,6 Z" ${c}/>`;
      case "leave": return `<path d="M5,-6 L-4,0 L5,6 Z" ${c}/><line x1="-5" y1="-6" x2="-5" y2="6" stroke="${color}" stroke-width="2"/>`;
      case "cross": return `<path d="M-5,-5 L5,5 M5,-5 L-5,5" stroke="${color}" stroke-width="3" fill="none"/>`;
      case "diamond": return `<path d="M0,-6 L6,0 L0,6 L-6,0 Z" ${c}/>`;
      case "down": return `<path d="M-5,-5 L5,-5 L0,5 Z" ${c}/>`;
      case "tick": return `<line x1="0" y1="-5" x2="0" y2="5" stroke="${color}" stroke-width="2"/>`;
      case "square": return `<rect x="-5" y="-5" width="10" height="10" ${c}/>`;
      case "star": return `<path d="M0,-6 L2,-2 L6,-2 L3,1 L4,6 L0,3 L-4,6 L-3,1 L-6,-2 L-2,-2 Z" ${c}/>`;
      case "line": return `<rect x="-2" y="-8" width="4" height="16" ${c}/>`;
      default: return `<circle r="5" ${c}/>`;
    }
  }

  function render() {
    const started = performance.now();
    const events = state.events;
    const root = document.getElementById("timeline");
    const summary = document.getElementById("summary");
    if (!events.length) {
      root.innerHTML = '<p class="empty">No events yet.</p>';
      summary.textContent = "no events";
      finish(started, 0);
      return;
    }
    const model = build(events);
    // live, while someone owns something, the bars run on to now
    const owning = model.bars.some((b) => b.end === null);
    const tEnd = document.body.dataset.poll && owning ? Math.max(model.t1, Date.now()) : model.t1;
    const span = Math.max(tEnd - model.t0, 1);
    const width = Math.max(root.clientWidth - 2, 900) * state.zoom;
    const plotW = width - LABEL_W - RIGHT_PAD;
    const x = (ts) => LABEL_W + ((ts - model.t0) / span) * plotW;
    // lane geometry: one row per part the member ever owned
    let y = AXIS_H + GROUP_LANE_H;
    const top = new Map();
    for (const l of model.lanes) {
      l.rows = new Map([...l.parts.keys()].sort().map((p, r) => [p, r]));
      l.y = y;
      l.h = Math.max(l.rows.size, 1) * ROW_H + LANE_PAD * 2;
      top.set(l.member, l);
      y += l.h;
    }
    const height = y + 4;
    const out = [`<svg xmlns="http://www.w3.org/2000/svg" id="chart" width="${width}" height="${height}" data-t0="${model.t0}" data-t1="${tEnd}">`];
    // the time axis
    out.push(`<g class="axis">`);
    const step = niceStep(span / Math.max(plotW / 110, 1));
    for (let t = 0; t <= span; t += step) {
      const px = x(model.t0 + t);
      out.push(`<line class="grid" x1="${px}" y1="${AXIS_H - 4}" x2="${px}" y2="${height}"/><text x="${px}" y="${AXIS_H - 8}">+${fmtSpan(t)}</text>`);
    }
    out.push(`</g>`);
    // lanes and their labels
    out.push(`<g class="group-lane"><rect class="lane-bg" x="0" y="${AXIS_H}" width="${width}" height="${GROUP_LANE_H}"/><text class="lane-label" x="6" y="${AXIS_H + 21}">group ${esc(events[0].group || "")}</text></g>`);
    model.lanes.forEach((l, n) => {
      out.push(`<g class="lane" data-member="${esc(l.member)}"><rect class="lane-bg ${n % 2 ? "odd" : "even"}" x="0" y="${l.y}" width="${width}" height="${l.h}"/>`);
      out.push(`<text class="lane-label" x="6" y="${l.y + 14}">${esc(short(l.member))}<title>${esc(l.member)}${l.info ? "\n" + esc(l.info) : ""}</title></text>`);
      if (l.info) out.push(`<text class="lane-info" x="6" y="${l.y + 26}">${esc(l.info.slice(0, 34))}</text>`);
      out.push(`</g>`);
    });
    // epoch bumps as faint lines across every lane
    for (const m of model.markers) {
      if (m.event.kind === "epoch-bumped") {
        out.push(`<line class="epoch-line" x1="${x(m.event.timestamp)}" y1="${AXIS_H}" x2="${x(m.event.timestamp)}" y2="${height}"/>`);
      }
    }
    // bars
    for (const b of model.bars) {
      const l = top.get(b.member);
      const by = l.y + LANE_PAD + l.rows.get(b.part) * ROW_H;
      const x1 = x(b.start), x2 = x(b.end === null ? tEnd : b.end);
      const title = `${b.label} owned by ${b.member}\nfrom ${new Date(b.start).toISOString()} (epoch ${b.epoch})\n` +
        (b.end === null ? "still owned" : `to ${new Date(b.end).toISOString()}, ${fmtSpan(b.end - b.start)}`);
      out.push(`<rect class="bar${b.end === null ? " open" : ""}" x="${x1}" y="${by}" width="${Math.max(x2 - x1, 2)}" height="${ROW_H - 2}" ` +
        `fill="${color(b.part)}" data-member="${esc(b.member)}" data-part="${esc(b.part)}" data-start-index="${b.startIndex}" ` +
        `data-end-index="${b.endIndex === null ? "" : b.endIndex}"><title>${esc(title)}</title></rect>`);
      if (l.rows.size <= 64) out.push(`<text class="bar-label" x="${x1 + 3}" y="${by + ROW_H - 3}">${esc(b.label)}</text>`);
    }
    // overlaps, in red, on each lane involved
    for (const o of model.overlaps) {
      const x1 = x(o.start), x2 = x(o.end === null ? tEnd : o.end);
      for (const member of o.members) {
        const l = top.get(member);
        const by = l.y + LANE_PAD + l.rows.get(o.part) * ROW_H - 2;
        out.push(`<rect class="overlap" x="${x1}" y="${by}" width="${Math.max(x2 - x1, 4)}" height="${ROW_H + 2}" data-part="${esc(o.part)}" ` +
          `data-members="${esc(o.members.join(" "))}" data-start-index="${o.startIndex}"><title>${esc(`${o.label} owned by ${o.members.join(" and ")} at once`)}</title></rect>`);
      }
    }
    // markers
    for (const m of model.markers) {
      const mx = x(m.event.timestamp);
      const my = m.member === null ? AXIS_H + GROUP_LANE_H / 2 : top.get(m.member).y + LANE_PAD / 2 + 1;
      out.push(`<g class="marker" transform="translate(${mx},${my})" data-index="${m.index}" data-kind="${esc(m.event.kind)}" data-member="${m.member === null ? "" : esc(m.member)}">` +
        `${shape(m.spec, m.spec.color)}<title>${esc(describe(m.event) + moved(m))}</title></g>`);
    }
    out.push(`</svg>`);
    root.innerHTML = out.join("");
    const now = new Set(model.bars.filter((b) => b.end === null).map((b) => b.member)).size;
    const epochs = events.filter((e) => e.kind === "epoch-bumped");
    summary.innerHTML = `<b>${esc(events[0].group || "")}</b> (${esc(model.groupType || "?")}): ${events.length} events, ${model.lanes.length} members seen, ` +
      `${now} owning now, epoch ${epochs.length ? epochs[epochs.length - 1].epoch : "?"}, ${model.bars.length} bars, ` +
      (model.overlaps.length ? `<span class="overlap-count">${model.overlaps.length} overlap${model.overlaps.length > 1 ? "s" : ""}: a partition owned twice at once</span>` : "no overlap");
    finish(started, model.bars.length);
  }

  // A target's hover: the assignments that followed it (until the next target), the
  // partitions it moved as the members acknowledged them.
  function moved(marker) {
    if (marker.event.kind !== "target-computed") return "";
    const lines = marker.followed;
    if (!lines.length) return "\nassigned after it: nothing";
    const shown = lines.slice(0, 20).join("\n");
    return `\nassigned after it:\n${shown}${lines.length > 20 ? `\n... and ${lines.length - 20} more` : ""}`;
  }

  function finish(started, bars) {
    const body = document.body;
    body.dataset.renderMs = (performance.now() - started).toFixed(1);
    body.dataset.readyMs = performance.now().toFixed(1);
    body.dataset.events = String(state.events.length);
    body.dataset.rendered = String((Number(body.dataset.rendered) || 0) + 1);
    body.dataset.bars = String(bars);
  }

  function niceStep(raw) {
    const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000];
    return steps.find((s) => s >= raw) || 3600000 * Math.ceil(raw / 3600000);
  }

  function fmtSpan(ms) {
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 120000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
    return `${(ms / 60000).toFixed(1)} min`;
  }

  function short(member) {
    return member.length > 22 ? member.slice(0, 10) + "…" + member.slice(-10) : member;
  }

  // A partition's colour: its number walks the hue circle by the golden angle, its topic
  // (task kind, subtopology) shifts the start, so neighbours differ and a partition keeps its
  // colour from lane to lane.
  function color(part) {
    const found = /^(.*)-(\d+)$/.exec(part);
    const name = found ? found[1] : part, number = found ? Number(found[2]) : 0;
    let h = 0;
    for (const c of name) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    return `hsl(${(h % 360 + number * 137.508) % 360}, 60%, 62%)`;
  }

  // --- following a live server ------------------------------------------------------------
  async function poll() {
    const url = document.body.dataset.poll;
    // since: a little before the newest event held, for an event stamped earlier that the
    // server derives later (an annotation noted while a record was being written)
    const since = state.events.length
      ? state.events.reduce((m, e) => Math.max(m, e.timestamp), -Infinity) - SINCE_SLACK_MS : null;
    try {
      const response = await fetch(since === null ? url : `${url}&since=${since}`, { cache: "no-store" });
      if (response.status === 404) {
        status("the server has seen nothing of this group yet");
      } else if (!response.ok) {
        throw new Error(`HTTP ${response.status}`);
      } else {
        const body = await response.json();
        state.polls += 1;
        document.body.dataset.polls = String(state.polls);
        if (document.body.dataset.firstEvents === undefined) {
          document.body.dataset.firstEvents = String(body.events.length);
        }
        if (merge(body.events, since) || document.body.dataset.rendered === undefined) render();
        if (state.reload) {
          state.reload = false;
          state.timer = setTimeout(poll, 0);
          return;
        }
        status(`live: ${state.events.length} events, last poll ${new Date().toLocaleTimeString()}`);
      }
      state.failures = 0;
    } catch (error) {
      state.failures += 1;
      status(`the server did not answer (${error.message}); retrying`);
    }
    schedule();
  }

  // The answer to since=S is every event at or after S, in order: the ones already held (in
  // the same order) then the new ones. Anything else (the server restarted, its ring let
  // events go) makes the next poll fetch everything again. True when something was added.
  function merge(fetched, since) {
    if (since === null) {
      state.events = fetched;
      return true;
    }
    const held = state.events.filter((e) => e.timestamp >= since);
    const same = held.length <= fetched.length &&
      held.every((e, i) => JSON.stringify(e) === JSON.stringify(fetched[i]));
    if (!same) {
      state.events = [];
      state.reload = true;
      return false;
    }
    const fresh = fetched.slice(held.length);
    state.events = state.events.concat(fresh);
    return fresh.length > 0;
  }

  function schedule() {
    const interval = Number(document.body.dataset.interval) || 1000;
    const wait = Math.min(interval * (1 + state.failures), 30000);
    state.timer = setTimeout(poll, wait);
  }

  function status(text) {
    const el = document.getElementById("status");
    if (el) el.textContent = text;
  }

  function legend() {
    const el = document.getElementById("legend");
    if (!el) return;
    const items = Object.values(KINDS).map((spec) =>
      `<span><svg width="14" height="16" viewBox="-7 -8 14 16">${shape(spec, spec.color)}</svg> ${esc(spec.text)}</span>`);
    items.push('<span><svg width="18" height="10"><rect width="18" height="8" y="1" fill="hsl(200, 55%, 62%)"/></svg> owned</span>');
    items.push('<span><svg width="18" height="10"><rect class="overlap" width="18" height="10"/></svg> owned twice at once</span>');
    el.innerHTML = items.join("");
  }

  function start() {
    legend();
    const embedded = document.getElementById("timeline-events");
    for (const button of document.querySelectorAll("[data-zoom]")) {
      button.addEventListener("click", () => {
        state.zoom = Math.max(0.25, Math.min(64, state.zoom * Number(button.dataset.zoom)));
        render();
      });
    }
    if (embedded) {
      state.events = JSON.parse(embedded.textContent);
      render();
      status(`offline: ${state.events.length} events`);
    }
    if (document.body.dataset.poll) poll();
  }

  window.kafkaTimeline = { build, partsOf, KINDS };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
