-- The bookstore's SQL statements by name, read by both bookstores: the Python one
-- (data.py's `statements()`, used by app.py) and the JVM one (jvm/bookstore, which
-- bundles this file into its jar at build time). One statement per line after its
-- `-- name:` line, `?` placeholders; the same text reaches the database from either
-- server, so PostgreSQL's pg_stat_statements groups them alike.
-- name: customer_name
SELECT c_fname, c_lname FROM customer WHERE c_id = ?
-- name: new_products
SELECT i_id, i_title, a_fname, a_lname FROM item JOIN author ON i_a_id = a_id WHERE i_subject = ? ORDER BY i_pub_date DESC, i_title LIMIT 50
-- name: best_sellers
SELECT i_id, i_title, SUM(ol_qty) AS sold FROM order_line JOIN item ON ol_i_id = i_id WHERE ol_o_id > ? AND i_subject = ? GROUP BY i_id, i_title ORDER BY sold DESC, i_id LIMIT 50
-- name: product_detail
SELECT i_title, a_fname, a_lname, i_desc, i_srp, i_cost, i_stock FROM item JOIN author ON i_a_id = a_id WHERE i_id = ?
-- name: search_title
SELECT i_id FROM item WHERE i_title LIKE ? ORDER BY i_title LIMIT 50
-- name: search_author
SELECT i_id FROM item WHERE i_a_id IN (SELECT a_id FROM author WHERE a_lname LIKE ?) ORDER BY i_title LIMIT 50
-- name: search_subject
SELECT i_id FROM item WHERE i_subject LIKE ? ORDER BY i_title LIMIT 50
-- name: search_item
SELECT i_title, i_a_id, i_cost FROM item WHERE i_id = ?
-- name: search_item_author
SELECT a_fname, a_lname FROM author WHERE a_id = ?
-- name: max_sc_id
SELECT MAX(sc_id) FROM shopping_cart
-- name: max_o_id
SELECT MAX(o_id) FROM orders
-- name: cart_exists
SELECT sc_id FROM shopping_cart WHERE sc_id = ?
-- name: cart_insert
INSERT INTO shopping_cart VALUES (?, ?)
-- name: cart_line_delete
DELETE FROM shopping_cart_line WHERE scl_sc_id = ? AND scl_i_id = ?
-- name: cart_line_insert
INSERT INTO shopping_cart_line VALUES (?, ?, ?)
-- name: cart_lines
SELECT scl_i_id, i_title, scl_qty, i_cost FROM shopping_cart_line JOIN item ON scl_i_id = i_id WHERE scl_sc_id = ? ORDER BY scl_i_id
-- name: cart_touch
UPDATE shopping_cart SET sc_time = ? WHERE sc_id = ?
-- name: customer_by_uname
SELECT c_id, c_fname, c_lname, c_addr_id, c_discount FROM customer WHERE c_uname = ?
-- name: customer_login
UPDATE customer SET c_login = ?, c_expiration = ? WHERE c_id = ?
-- name: address
SELECT addr_street1, addr_city, addr_co_id FROM address WHERE addr_id = ?
-- name: country
SELECT co_name FROM country WHERE co_id = ?
-- name: cart_items
SELECT scl_i_id, scl_qty FROM shopping_cart_line WHERE scl_sc_id = ? ORDER BY scl_i_id
-- name: item_cost
SELECT i_cost FROM item WHERE i_id = ?
-- name: order_customer
SELECT c_id, c_addr_id, c_discount FROM customer WHERE c_id = ?
-- name: order_cart_lines
SELECT scl_i_id, scl_qty, i_cost, i_stock FROM shopping_cart_line JOIN item ON scl_i_id = i_id WHERE scl_sc_id = ? ORDER BY scl_i_id
-- name: order_insert
INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
-- name: order_line_insert
INSERT INTO order_line VALUES (?, ?, ?, ?, ?, ?)
-- name: item_stock
UPDATE item SET i_stock = ? WHERE i_id = ?
-- name: cc_xact_insert
INSERT INTO cc_xacts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
-- name: cart_empty
DELETE FROM shopping_cart_line WHERE scl_sc_id = ?
-- name: customer_login_check
SELECT c_id FROM customer WHERE c_uname = ? AND c_passwd = ?
-- name: last_order
SELECT o_id, o_date, o_total, o_status FROM orders WHERE o_c_id = ? ORDER BY o_date DESC, o_id DESC LIMIT 1
-- name: order_lines
SELECT ol_i_id, i_title, ol_qty FROM order_line JOIN item ON ol_i_id = i_id WHERE ol_o_id = ?
-- name: admin_item
SELECT i_title, i_cost, i_image, i_thumbnail FROM item WHERE i_id = ?
-- name: admin_update
UPDATE item SET i_cost = ?, i_image = ?, i_thumbnail = ?, i_pub_date = ? WHERE i_id = ?
-- name: related_items
SELECT ol_i_id FROM order_line WHERE ol_o_id IN (SELECT o_id FROM orders WHERE o_c_id IN (SELECT o_c_id FROM orders JOIN order_line ON o_id = ol_o_id WHERE ol_i_id = ?) ORDER BY o_id DESC LIMIT 100) AND ol_i_id <> ? GROUP BY ol_i_id ORDER BY SUM(ol_qty) DESC, ol_i_id LIMIT 5
-- name: related_update
UPDATE item SET i_related1 = ?, i_related2 = ?, i_related3 = ?, i_related4 = ?, i_related5 = ? WHERE i_id = ?
