// A tracetree service client with the JDK alone, as an IntelliJ plugin
// would talk to `tracetree serve --stdio` (docs/PROTOCOL.md): it starts the
// server, opens a trace, shows each thread's first top-level tracepoint with
// its first children, finds a method's calls, and shuts the server down.
//
//   javac -d out examples/java/TraceClient.java
//   java -cp out TraceClient tracetree app.trace
//
// Prints `thread ID: TEXT (N children)` per thread, the children indented,
// then `hits for NAME: TOTAL`, then `ok`.

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public final class TraceClient {
    private final Process server;
    private final InputStream in;
    private final OutputStream out;
    private int nextId = 0;

    TraceClient(String tracetree) throws IOException {
        server = new ProcessBuilder(tracetree, "serve", "--stdio", "--no-cache")
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        in = new BufferedInputStream(server.getInputStream());
        out = server.getOutputStream();
    }

    /** Sends a request and returns its result; notifications before the answer are skipped. */
    Object call(String method, String params) throws IOException {
        int id = ++nextId;
        send("{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"method\":\"" + method + "\",\"params\":" + params + "}");
        while (true) {
            Map<?, ?> message = (Map<?, ?>) new Json(read()).value();
            if (!message.containsKey("id")) continue; // $/progress and the like
            if (message.containsKey("error")) throw new IOException(method + ": " + message.get("error"));
            return message.get("result");
        }
    }

    void send(String json) throws IOException {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        out.write(("Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
    }

    /** One message's body: headers up to the blank line, then Content-Length bytes. */
    String read() throws IOException {
        int length = -1;
        while (true) {
            StringBuilder line = new StringBuilder();
            int c;
            while ((c = in.read()) != '\n') {
                if (c < 0) throw new EOFException("the server closed its output");
                if (c != '\r') line.append((char) c);
            }
            if (line.length() == 0) break;
            String[] header = line.toString().split(":", 2);
            if (header[0].trim().equalsIgnoreCase("Content-Length")) length = Integer.parseInt(header[1].trim());
        }
        return new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }

    static String quote(String text) {
        StringBuilder json = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') json.append('\\').append(c);
            else if (c < 0x20) json.append(String.format("\\u%04x", (int) c));
            else json.append(c);
        }
        return json.append('"').toString();
    }

    public static void main(String[] args) throws Exception {
        TraceClient client = new TraceClient(args[0]);
        client.call("initialize", "{\"processId\":null,\"capabilities\":{}}");
        Map<?, ?> opened = (Map<?, ?>) client.call("trace/open", "{\"path\":" + quote(args[1]) + "}");
        String trace = quote((String) opened.get("trace"));
        String method = null;
        for (Object thread : (List<?>) opened.get("threads")) {
            Object id = ((Map<?, ?>) thread).get("id");
            Map<?, ?> roots = (Map<?, ?>) client.call("trace/roots",
                    "{\"trace\":" + trace + ",\"thread\":" + id + ",\"start\":0,\"count\":1}");
            Map<?, ?> root = (Map<?, ?>) ((List<?>) roots.get("nodes")).get(0);
            System.out.println("thread " + id + ": " + root.get("text") + " (" + root.get("childCount") + " children)");
            Map<?, ?> children = (Map<?, ?>) client.call("trace/children",
                    "{\"trace\":" + trace + ",\"node\":" + quote((String) root.get("handle")) + ",\"start\":0,\"count\":3}");
            for (Object child : (List<?>) children.get("nodes")) {
                Map<?, ?> node = (Map<?, ?>) child;
                System.out.println("  " + node.get("text"));
                if (method == null && "method_call".equals(node.get("kind"))) {
                    Map<?, ?> detail = (Map<?, ?>) client.call("trace/node",
                            "{\"trace\":" + trace + ",\"node\":" + quote((String) node.get("handle")) + "}");
                    method = (String) detail.get("method");
                }
            }
        }
        if (method != null) {
            String name = method.substring(method.lastIndexOf('.') + 1);
            Map<?, ?> found = (Map<?, ?>) client.call("trace/search",
                    "{\"trace\":" + trace + ",\"pattern\":" + quote(name) + ",\"max\":10}");
            System.out.println("hits for " + name + ": " + found.get("total"));
        }
        client.call("shutdown", "null");
        client.send("{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}");
        if (client.server.waitFor() != 0) throw new IOException("the server exited with " + client.server.exitValue());
        System.out.println("ok");
    }

    /** Just enough JSON: objects as maps, arrays as lists, strings, numbers as Long or Double, booleans, null. */
    static final class Json {
        private final String text;
        private int at = 0;

        Json(String text) { this.text = text; }

        Object value() {
            skipSpace();
            char c = text.charAt(at);
            if (c == '{') {
                Map<String, Object> map = new LinkedHashMap<>();
                at++;
                skipSpace();
                if (text.charAt(at) == '}') { at++; return map; }
                while (true) {
                    skipSpace();
                    String key = string();
                    skipSpace();
                    at++; // ':'
                    map.put(key, value());
                    skipSpace();
                    if (text.charAt(at++) == '}') return map;
                }
            }
            if (c == '[') {
                List<Object> list = new ArrayList<>();
                at++;
                skipSpace();
                if (text.charAt(at) == ']') { at++; return list; }
                while (true) {
                    list.add(value());
                    skipSpace();
                    if (text.charAt(at++) == ']') return list;
                }
            }
            if (c == '"') return string();
            if (text.startsWith("true", at)) { at += 4; return true; }
            if (text.startsWith("false", at)) { at += 5; return false; }
            if (text.startsWith("null", at)) { at += 4; return null; }
            int start = at;
            while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) at++;
            String number = text.substring(start, at);
            return number.matches("-?\\d+") ? (Object) Long.parseLong(number) : (Object) Double.parseDouble(number);
        }

        private String string() {
            StringBuilder s = new StringBuilder();
            at++; // '"'
            while (true) {
                char c = text.charAt(at++);
                if (c == '"') return s.toString();
                if (c != '\\') { s.append(c); continue; }
                char e = text.charAt(at++);
                switch (e) {
                    case 'n': s.append('\n'); break;
                    case 'r': s.append('\r'); break;
                    case 't': s.append('\t'); break;
                    case 'b': s.append('\b'); break;
                    case 'f': s.append('\f'); break;
                    case 'u': s.append((char) Integer.parseInt(text.substring(at, at + 4), 16)); at += 4; break;
                    default: s.append(e);
                }
            }
        }

        private void skipSpace() {
            while (at < text.length() && Character.isWhitespace(text.charAt(at))) at++;
        }
    }
}
