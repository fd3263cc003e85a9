package io.github.nodeid.client;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON reader (RFC 8259) for the id file and the broker's
 * answers: one value, optionally surrounded by whitespace, in UTF-8; nothing
 * after it. Objects become {@code Map<String, Object>} (a repeated key is an
 * error), arrays {@code List<Object>}, strings {@code String}, integers
 * {@code Long} (or {@code BigInteger} beyond a long), other numbers
 * {@code Double}, and true, false and null {@code Boolean} and {@code null}.
 */
final class Json {
    private static final int MAX_DEPTH = 32;

    /** Input that is not one JSON value, or a field that is not what it must be. */
    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;

        Invalid(String message) {
            super(message, null, false, false);
        }
    }

    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    /**
     * Parses data as one JSON object.
     *
     * @throws Invalid with the reason: "truncated", "not JSON", "not an object"...
     */
    static Map<String, Object> parseObject(byte[] data) throws Invalid {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(data)).toString();
        } catch (CharacterCodingException e) {
            throw new Invalid("not JSON: not UTF-8");
        }
        Json p = new Json(text);
        p.space();
        if (p.i == text.length()) {
            throw new Invalid(data.length == 0 ? "truncated: empty" : "truncated: only whitespace");
        }
        if (text.charAt(p.i) != '{') {
            // still report truncation or garbage in what is there
            p.value(0);
            throw new Invalid("not a JSON object");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) p.value(0);
        p.space();
        if (p.i != text.length()) {
            throw p.error("trailing data after the object");
        }
        return m;
    }

    /**
     * Returns the integer field key of m: present, an integer, 0..max.
     *
     * @throws Invalid naming the field and what is wrong
     */
    static long field(Map<String, Object> m, String key, long max) throws Invalid {
        if (!m.containsKey(key)) {
            throw new Invalid("field " + key + " missing");
        }
        Object v = m.get(key);
        if (v instanceof Long n) {
            if (n < 0) {
                throw new Invalid("field " + key + " is negative: " + n);
            }
            if (n > max) {
                throw new Invalid("field " + key + " is " + n + ", above " + max);
            }
            return n;
        }
        if (v instanceof BigInteger b) {
            throw new Invalid("field " + key + " is " + (b.signum() < 0 ? "negative: " : "out of range: ") + b);
        }
        throw new Invalid("field " + key + " is not an integer: " + describe(v));
    }

    private static String describe(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof String str) {
            return "a string \"" + (str.length() > 40 ? str.substring(0, 40) + "..." : str) + "\"";
        }
        if (v instanceof Map) {
            return "an object";
        }
        if (v instanceof List) {
            return "an array";
        }
        return String.valueOf(v);
    }

    private Invalid error(String what) {
        return new Invalid("not JSON: " + what + " at offset " + i);
    }

    private Invalid truncated() {
        return new Invalid("truncated: the JSON ends early, after " + s.length() + " characters");
    }

    private void space() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            i++;
        }
    }

    private char peek() throws Invalid {
        if (i >= s.length()) {
            throw truncated();
        }
        return s.charAt(i);
    }

    private void expect(char c) throws Invalid {
        if (peek() != c) {
            throw error("'" + c + "' expected");
        }
        i++;
    }

    private Object value(int depth) throws Invalid {
        if (depth > MAX_DEPTH) {
            throw error("nested too deep");
        }
        space();
        char c = peek();
        switch (c) {
            case '{':
                return object(depth);
            case '[':
                return array(depth);
            case '"':
                return string();
            case 't':
                word("true");
                return Boolean.TRUE;
            case 'f':
                word("false");
                return Boolean.FALSE;
            case 'n':
                word("null");
                return null;
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character '" + c + "'");
        }
    }

    private Map<String, Object> object(int depth) throws Invalid {
        Map<String, Object> m = new LinkedHashMap<>();
        i++; // {
        space();
        if (peek() == '}') {
            i++;
            return m;
        }
        while (true) {
            space();
            if (peek() != '"') {
                throw error("a key expected");
            }
            String key = string();
            if (m.containsKey(key)) {
                throw error("key \"" + key + "\" repeated");
            }
            space();
            expect(':');
            m.put(key, value(depth + 1));
            space();
            char c = peek();
            i++;
            if (c == '}') {
                return m;
            }
            if (c != ',') {
                i--;
                throw error("',' or '}' expected");
            }
        }
    }

    private List<Object> array(int depth) throws Invalid {
        List<Object> l = new ArrayList<>();
        i++; // [
        space();
        if (peek() == ']') {
            i++;
            return l;
        }
        while (true) {
            l.add(value(depth + 1));
            space();
            char c = peek();
            i++;
            if (c == ']') {
                return l;
            }
            if (c != ',') {
                i--;
                throw error("',' or ']' expected");
            }
        }
    }

    private void word(String w) throws Invalid {
        for (int k = 0; k < w.length(); k++) {
            if (peek() != w.charAt(k)) {
                throw error("unexpected character '" + s.charAt(i) + "'");
            }
            i++;
        }
    }

    private String string() throws Invalid {
        i++; // "
        StringBuilder b = null;
        int start = i;
        while (true) {
            char c = peek();
            if (c == '"') {
                String r = b == null ? s.substring(start, i) : b.append(s, start, i).toString();
                i++;
                return r;
            }
            if (c < 0x20) {
                throw error("control character in a string");
            }
            if (c != '\\') {
                i++;
                continue;
            }
            if (b == null) {
                b = new StringBuilder();
            }
            b.append(s, start, i);
            i++;
            char e = peek();
            i++;
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    int u = 0;
                    for (int k = 0; k < 4; k++) {
                        int d = Character.digit(peek(), 16);
                        if (d < 0) {
                            throw error("bad \\u escape");
                        }
                        u = u * 16 + d;
                        i++;
                    }
                    b.append((char) u);
                }
                default -> {
                    i--;
                    throw error("bad escape '\\" + e + "'");
                }
            }
            start = i;
        }
    }

    private Object number() throws Invalid {
        int start = i;
        if (peek() == '-') {
            i++;
        }
        char c = peek();
        if (c == '0') {
            i++;
        } else if (c >= '1' && c <= '9') {
            digits();
        } else {
            throw error("a digit expected");
        }
        boolean integer = true;
        if (i < s.length() && s.charAt(i) == '.') {
            integer = false;
            i++;
            if (!isDigit(peek())) {
                throw error("a digit expected");
            }
            digits();
        }
        if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            integer = false;
            i++;
            if (peek() == '+' || peek() == '-') {
                i++;
            }
            if (!isDigit(peek())) {
                throw error("a digit expected");
            }
            digits();
        }
        String t = s.substring(start, i);
        if (!integer) {
            return Double.valueOf(t);
        }
        BigInteger v = new BigInteger(t);
        return v.bitLength() < 64 ? (Object) v.longValue() : v;
    }

    private void digits() {
        while (i < s.length() && isDigit(s.charAt(i))) {
            i++;
        }
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }
}
