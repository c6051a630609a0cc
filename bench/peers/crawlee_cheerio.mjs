// Crawlee's side of bench/run.sh: a CheerioCrawler that follows every link on the site's host and
// stores a 2-field item per page (in memory), as `crawler run` does with bench/peers/crawl.json.
// Run from a folder where npm installed crawlee: node crawlee_cheerio.mjs START_URL
import { CheerioCrawler, Configuration } from "crawlee";

const config = new Configuration({ persistStorage: false, logLevel: "WARNING" });
let items = 0;
const crawler = new CheerioCrawler({
  maxConcurrency: 64,
  respectRobotsTxtFile: true,
  async requestHandler({ $, enqueueLinks, pushData }) {
    await pushData({ title: $("title").text(), heading: $("h1").first().text() });
    items += 1;
    await enqueueLinks({ strategy: "same-hostname" });
  },
}, config);
await crawler.run([process.argv[2]]);
console.error(`crawlee: ${items} items`);
