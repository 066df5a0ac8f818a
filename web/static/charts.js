// The job page's charts (uPlot): drawn from /jobs/ID/series.json, extended by the live
// `telemetry` events, redrawn at most twice a second, each site's series bounded.
(function () {
  "use strict";
  var section = document.querySelector("[data-series]");
  if (!section || typeof uPlot === "undefined") return;
  var REDRAW_MS = 500;
  var COLOURS = ["#0b57b0", "#c2410c", "#0f766e", "#7c3aed", "#a16207", "#be123c", "#334155", "#15803d"];
  var DASHES = [[], [6, 3], [2, 2], [8, 3, 2, 3]];
  var state = null; // {sites, perSite, bspPerClock, points: [[t, site, clock, acc, bytes, stall]]}
  var charts = {};
  var dirty = false;
  var status = document.getElementById("charts-status");

  function say(text) { if (status) status.textContent = text; }

  // Aligned data for uPlot: one x (time) for every row, each site's series null elsewhere.
  function aligned(field, extra) {
    var times = [];
    var rows = state.points;
    for (var i = 0; i < rows.length; i++) times.push(rows[i][0]);
    var series = state.sites.map(function (_, s) {
      return rows.map(function (r) { return r[1] === s ? r[field] : null; });
    });
    var data = [times].concat(series);
    if (extra) data.push(extra(rows));
    return data;
  }

  function bspLine(rows) {
    if (!state.bspPerClock) return rows.map(function () { return null; });
    var clocks = {};
    return rows.map(function (r) {
      clocks[r[1]] = r[2];
      var most = 0;
      for (var k in clocks) if (clocks[k] > most) most = clocks[k];
      return most * state.bspPerClock;
    });
  }

  function totalLine(rows) {
    var sent = {};
    return rows.map(function (r) {
      if (r[4] !== null && r[4] !== undefined) sent[r[1]] = r[4];
      var sum = 0;
      for (var k in sent) sum += sent[k];
      return sum;
    });
  }

  var IEC = ["B", "KiB", "MiB", "GiB", "TiB"];
  function iec(v) {
    if (v === null || v === undefined) return "–";
    var u = 0;
    while (Math.abs(v) >= 1024 && u < IEC.length - 1) { v /= 1024; u++; }
    return (u ? v.toFixed(1) : v.toFixed(0)) + " " + IEC[u];
  }
  // Byte axes step in powers of two (512 KiB, 1 MiB, 2 MiB...), which read as round in IEC.
  var POWERS_OF_TWO = [];
  for (var p = 0; p < 50; p++) POWERS_OF_TWO.push(Math.pow(2, p));

  var SPECS = {
    accuracy: { field: 3, label: "accuracy", value: function (u, v) { return v === null ? "–" : (v * 100).toFixed(1) + " %"; } },
    wan: { field: 4, label: "bytes", value: function (u, v) { return iec(v); }, incrs: POWERS_OF_TWO, extras: [["all sites", totalLine], ["BSP would send", bspLine]] },
    stall: { field: 5, label: "seconds", value: function (u, v) { return v === null ? "–" : v.toFixed(1) + " s"; } },
    clock: { field: 2, label: "clock", value: function (u, v) { return v === null ? "–" : String(v); } }
  };

  // Times in UTC (as everywhere on the dashboard), as fine as the ticks are apart.
  function utcTicks(u, ticks, axis, space, step) {
    return ticks.map(function (t) {
      var iso = new Date(t * 1000).toISOString(); // 2026-11-26T14:04:36.500Z
      if (step >= 86400) return iso.slice(0, 10);
      if (step >= 60) return iso.slice(11, 16);
      return iso.slice(11, step >= 1 ? 19 : 21);
    });
  }

  // Wide enough for the longest tick label ("488.3 KiB"), which uPlot does not measure.
  function labelsWidth(u, values) {
    var longest = 0;
    (values || []).forEach(function (v) { longest = Math.max(longest, String(v).length); });
    return 24 + 7 * Math.max(longest, 4);
  }

  function build(name, box) {
    var spec = SPECS[name];
    var series = [{ label: "time (UTC)", value: function (u, t) { return t === null ? "–" : new Date(t * 1000).toISOString().slice(11, 19) + " UTC"; } }];
    state.sites.forEach(function (site, i) {
      series.push({ label: site, stroke: COLOURS[i % COLOURS.length], dash: DASHES[i % DASHES.length], width: 2, spanGaps: true, value: spec.value });
    });
    (spec.extras || []).forEach(function (extra, j) {
      series.push({ label: extra[0], stroke: j ? "#6b7280" : "#111827", dash: [4, 4], width: 1.5, spanGaps: true, value: spec.value });
    });
    var yAxis = { values: function (u, vals) { return vals.map(function (v) { return spec.value(u, v); }); }, size: labelsWidth };
    if (spec.incrs) yAxis.incrs = spec.incrs;
    var opts = {
      width: Math.max(280, box.clientWidth), height: 220, series: series,
      scales: { x: { time: true } },
      tzDate: function (t) { return uPlot.tzDate(new Date(t * 1000), "Etc/UTC"); },
      axes: [{ values: utcTicks, space: 90 }, yAxis], // space: room for "14:29:18.1"
      legend: { live: true },
      hooks: { setSeries: [pressed] }
    };
    var chart = new uPlot(opts, dataFor(name), box);
    toggles(chart);
    return chart;
  }

  // uPlot hides a series when its legend entry is clicked; a button in each entry lets
  // the keyboard do it too (Enter or Space click it), and says whether it is shown.
  function toggles(chart) {
    chart.root.querySelectorAll(".u-legend .u-series").forEach(function (row, i) {
      var label = row.querySelector(".u-label");
      if (i === 0 || !label) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "u-toggle";
      button.textContent = label.textContent;
      label.textContent = "";
      label.appendChild(button);
    });
    pressed(chart);
  }

  function pressed(chart) {
    chart.root.querySelectorAll(".u-legend .u-series").forEach(function (row, i) {
      var button = row.querySelector(".u-toggle");
      if (button) button.setAttribute("aria-pressed", String(chart.series[i].show));
    });
  }

  function dataFor(name) {
    var spec = SPECS[name];
    var data = aligned(spec.field);
    (spec.extras || []).forEach(function (extra) { data.push(extra[1](state.points)); });
    return data;
  }

  function redraw() {
    if (!dirty || !state) return;
    dirty = false;
    for (var name in charts) charts[name].setData(dataFor(name));
  }

  function bound() {
    // Keep each site's series within its budget: drop every other old point when over.
    var limit = state.perSite * state.sites.length;
    if (state.points.length <= limit) return;
    var keep = [];
    var half = Math.floor(state.points.length / 2);
    for (var i = 0; i < state.points.length; i++) {
      if (i >= half || i % 2 === 0) keep.push(state.points[i]);
    }
    state.points = keep;
  }

  function onTelemetry(event) {
    if (!state) return;
    var s;
    try { s = JSON.parse(event.data); } catch (e) { return; }
    if (s.job_id !== section.getAttribute("data-job")) return;
    var site = state.sites.indexOf(s.site);
    if (site < 0) return;
    state.points.push([s.time, site, s.clock, s.accuracy, s.wan_bytes, s.stall_s]);
    bound();
    dirty = true;
    window.atollLastTelemetry = { time: s.time, seenAt: Date.now() / 1000 };
  }

  function load() {
    say("Loading the charts…");
    fetch(section.getAttribute("data-series"), { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (body) {
        state = { sites: body.sites, perSite: body.points_per_site, bspPerClock: body.bsp_bytes_per_clock, points: body.rows };
        section.querySelectorAll("[data-chart]").forEach(function (box) {
          var name = box.getAttribute("data-chart");
          if (charts[name]) charts[name].destroy();
          box.textContent = "";
          charts[name] = build(name, box);
        });
        say((body.complete ? "Live: new points arrive as the sites report." : "Live; the charts start from the first samples kept for this page, and grow as the sites report.") +
          " A series' name under a chart hides or shows it.");
      })
      .catch(function (e) { say("The charts could not load (" + e.message + "); the table above is current."); });
  }

  function attach(source) {
    source.addEventListener("telemetry", onTelemetry);
    source.addEventListener("reset", load);
  }
  if (window.atollEvents) attach(window.atollEvents);
  document.addEventListener("atoll:events", function (e) { attach(e.detail); });
  setInterval(redraw, REDRAW_MS);
  window.addEventListener("resize", function () {
    for (var name in charts) {
      var box = section.querySelector('[data-chart="' + name + '"]');
      charts[name].setSize({ width: Math.max(280, box.clientWidth), height: 220 });
    }
  });
  load();
})();
