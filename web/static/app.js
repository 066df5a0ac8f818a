// Atoll dashboard: says whether the page is live (its event stream connected and the
// control plane's stream behind it alive), reconnecting, or stale. Pages work without it.
(function () {
  "use strict";
  var STALE_MS = 15000; // three heartbeats missed
  var live = document.getElementById("live");
  var lastBeat = 0;
  var upstreamLive = true;
  var source = null;

  function show(state, text) {
    if (!live) return;
    live.setAttribute("data-state", state);
    var label = live.querySelector(".live-text");
    if (label && label.textContent !== text) label.textContent = text;
  }

  function refresh() {
    if (!source) { show("connecting", "connecting"); return; }
    if (source.readyState === 0) { show("reconnecting", "reconnecting"); return; }
    if (source.readyState === 2) { show("stale", "stale: not connected"); return; }
    if (Date.now() - lastBeat > STALE_MS) { show("stale", "stale: no heartbeat"); return; }
    if (!upstreamLive) { show("stale", "stale: control plane events lost"); return; }
    show("live", "live");
  }

  function onHeartbeat(event) {
    lastBeat = Date.now();
    try { upstreamLive = JSON.parse(event.data).live !== false; } catch (e) { upstreamLive = true; }
    refresh();
  }

  document.body.addEventListener("htmx:sseOpen", function (event) {
    var opened = event.detail && event.detail.source;
    if (!opened || opened === source) { refresh(); return; }
    source = opened;
    window.atollEvents = source;
    source.addEventListener("heartbeat", onHeartbeat);
    source.addEventListener("upstream", function (e) {
      try { upstreamLive = JSON.parse(e.data).live !== false; } catch (err) { /* keep */ }
      refresh();
    });
    document.dispatchEvent(new CustomEvent("atoll:events", { detail: source }));
    refresh();
  });
  document.body.addEventListener("htmx:sseError", function () { refresh(); });
  setInterval(refresh, 1000);
  refresh();
})();
