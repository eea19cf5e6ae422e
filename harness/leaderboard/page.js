// Sortable tables and the instance view of the leaderboard page. Plain DOM, no library: the page opens from disk.
"use strict";

function sortTable(table, column, th) {
  const body = table.tBodies[0];
  const numeric = th.dataset.type === "num";
  const ascending = th.getAttribute("aria-sort") !== "ascending";
  for (const other of table.tHead.rows[0].cells) other.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const rows = Array.from(body.rows);
  const key = (row) => row.cells[column].dataset.v;
  rows.sort((a, b) => {
    const x = key(a), y = key(b);
    if (x === "" && y === "") return 0;
    if (x === "") return 1; // empty cells last, whatever the direction
    if (y === "") return -1;
    const order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
    return ascending ? order : -order;
  });
  for (const row of rows) body.appendChild(row);
}

function setUpSorting() {
  for (const table of document.querySelectorAll("table.sortable")) {
    Array.from(table.tHead.rows[0].cells).forEach((th, column) => {
      th.addEventListener("click", () => sortTable(table, column, th));
    });
  }
}

function element(tag, attributes, text) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function bars(distribution) {
  const box = element("div");
  for (const [word, p] of Object.entries(distribution || {})) {
    const bar = element("div", { class: "bar" });
    bar.appendChild(element("span", { class: "word", title: word }, word));
    bar.appendChild(element("span", { class: "fill", style: `width: ${Math.round(p * 300)}px` }));
    bar.appendChild(element("span", { class: "p" }, p.toFixed(3)));
    box.appendChild(bar);
  }
  return box;
}

function texts(list) {
  const ol = element("ol");
  for (const text of list || []) ol.appendChild(element("li", {}, text));
  return ol;
}

function choices(item, probabilities) {
  const box = element("div");
  (item.options || []).forEach((option, i) => {
    const p = probabilities ? probabilities[i] : undefined;
    const bar = element("div", { class: "bar" });
    const mark = i === item.target ? " (target)" : "";
    bar.appendChild(element("span", { class: "word", title: option + mark }, option + mark));
    bar.appendChild(element("span", { class: "fill", style: `width: ${Math.round((p || 0) * 300)}px` }));
    bar.appendChild(element("span", { class: "p" }, p === undefined ? "–" : p.toFixed(3)));
    box.appendChild(bar);
  });
  return box;
}

function showInstance(data) {
  const task = document.getElementById("instance-task").value;
  const index = Number(document.getElementById("instance-item").value);
  const view = document.getElementById("instance-view");
  view.replaceChildren();
  const taskData = data[task];
  if (!taskData || !taskData.items[index]) return;
  const item = taskData.items[index];
  const context = element("div", { class: "panel" });
  context.appendChild(element("h4", {}, `instance ${item.id}`));
  context.appendChild(element("div", { class: "context" }, item.text));
  view.appendChild(context);
  for (const [label, perItem] of Object.entries(taskData.systems)) {
    const shown = perItem[index];
    if (shown === null || shown === undefined) continue;
    const panel = element("div", { class: label === "human" ? "panel human" : "panel", "data-system": label });
    panel.appendChild(element("h4", {}, label === "human" ? "people" : label));
    const values = Object.entries(taskData.values)
      .filter(([, bySystem]) => bySystem[label] && bySystem[label][index] !== null)
      .map(([column, bySystem]) => `${label === "human" ? "control for " : ""}${column} ${bySystem[label][index].toFixed(3)}`);
    if (values.length) panel.appendChild(element("p", { class: "note" }, values.slice(0, 4).join(" · ")));
    if (taskData.kind === "cloze") panel.appendChild(bars(shown));
    else if (taskData.kind === "generation") panel.appendChild(texts(shown));
    else if (taskData.kind === "choice") panel.appendChild(choices(item, shown));
    view.appendChild(panel);
  }
}

function setUpInstances() {
  const data = JSON.parse(document.getElementById("instance-data").textContent);
  const taskSelect = document.getElementById("instance-task");
  const itemSelect = document.getElementById("instance-item");
  for (const task of Object.keys(data)) {
    if (data[task].items.length) taskSelect.appendChild(element("option", { value: task }, task));
  }
  const fillItems = () => {
    itemSelect.replaceChildren();
    const taskData = data[taskSelect.value];
    (taskData ? taskData.items : []).forEach((item, i) => {
      const text = item.text.length > 90 ? "…" + item.text.slice(-89) : item.text;
      itemSelect.appendChild(element("option", { value: String(i) }, `${item.id}: ${text}`));
    });
    showInstance(data);
  };
  taskSelect.addEventListener("change", fillItems);
  itemSelect.addEventListener("change", () => showInstance(data));
  fillItems();
}

document.addEventListener("DOMContentLoaded", () => {
  setUpSorting();
  setUpInstances();
});
