// spider-rs's side of bench/run.sh (links only): every page of the site, robots.txt obeyed, no
// depth limit. Run from a folder where npm installed @spider-rs/spider-rs and its linux-x64-gnu
// binary package: node spider_rs.mjs START_URL
import { Website } from "@spider-rs/spider-rs";

const website = new Website(process.argv[2]).withRespectRobotsTxt(true).withDepth(0).build();
let pages = 0;
await website.crawl(() => { pages += 1; });
console.error(`spider-rs: ${pages} pages`);
