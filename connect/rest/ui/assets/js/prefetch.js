// Loaded before everything else (it needs only api.js): asks for the connector list
// while the browser still fetches the views' modules, so the data and the code arrive
// together. The first render of the list is the console's figure of merit
// (bench/ops_bench.py).

import { prefetch } from "./api.js";

if ((location.hash || "#/connectors") === "#/connectors") prefetch("ops/connectors");
