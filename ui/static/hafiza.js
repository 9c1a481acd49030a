// hafiza ui: the review queue by keyboard (j/k move, a accepts, r rejects with the reason typed), nothing else.
// Served from this origin only (the page's Content-Security-Policy allows no inline script).
(function () {
  "use strict";
  function actions() { return Array.prototype.slice.call(document.querySelectorAll(".queue .action.open")); }
  function current() { return document.querySelector(".queue .action.current"); }
  function select(el) {
    var was = current();
    if (was) { was.classList.remove("current"); }
    if (el) { el.classList.add("current"); el.scrollIntoView({block: "nearest"}); }
  }
  function move(step) {
    var all = actions();
    if (!all.length) { return; }
    var at = all.indexOf(current());
    select(all[Math.max(0, Math.min(all.length - 1, at < 0 ? 0 : at + step))]);
  }
  function press(kind) {
    var el = current();
    if (!el) { return; }
    var button = el.querySelector("button[data-decide=" + kind + "]");
    if (button) { button.click(); }
  }
  document.addEventListener("keydown", function (event) {
    var tag = (event.target && event.target.tagName) || "";
    if (event.ctrlKey || event.metaKey || event.altKey || /INPUT|TEXTAREA|SELECT/.test(tag)) { return; }
    if (!document.querySelector(".queue")) { return; }
    if (event.key === "j") { move(1); } else if (event.key === "k") { move(-1); }
    else if (event.key === "a") { press("accept"); } else if (event.key === "r") { press("reject"); }
    else { return; }
    event.preventDefault();
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (document.querySelector(".queue") && !current()) { move(0); }
  });
  document.addEventListener("DOMContentLoaded", function () {
    if (document.querySelector(".queue")) { move(0); }
  });
})();
